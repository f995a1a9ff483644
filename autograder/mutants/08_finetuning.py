"""Wrong implementations of chapter 08's exercises: each must lose points under the real nbgrader autograde."""

_CONTINUES = "continues = prefix == \"I\" and start >= 0 and tag_type == kind"
_CLOSE = "chunks.append((kind, start, i - 1))"
_GOLD = "gold.update((n, *chunk) for chunk in bio_entities(t))"
_PRED = "pred.update((n, *chunk) for chunk in bio_entities(p))"
_NORMALIZE = ("text = \"\".join(ch for ch in s.lower() if ch not in _PUNCTUATION)\n"
              "    return \" \".join(_ARTICLES.sub(\" \", text).split())")
_SAME = "same = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())"

MUTANTS = [
    # --- bio-solution: bio_entities -------------------------------------------------------------------------------
    dict(exercise="bio-solution", name="orphan-i-dropped",
         why="an I-x that continues nothing is dropped instead of starting an entity (strict IOB2, not seqeval)",
         edits=[("if prefix != \"O\" and not continues:", "if prefix == \"B\":")]),
    dict(exercise="bio-solution", name="type-change-continues",
         why="an I-y right after an x entity extends it (the type is not compared)",
         edits=[(_CONTINUES, "continues = prefix == \"I\" and start >= 0")]),
    dict(exercise="bio-solution", name="end-exclusive",
         why="the end is the position after the entity (Python slice style), not its last word",
         edits=[(_CLOSE, "chunks.append((kind, start, i))"),
                ("chunks.append((kind, start, len(tags) - 1))", "chunks.append((kind, start, len(tags)))")]),
    dict(exercise="bio-solution", name="last-entity-lost",
         why="an entity still open at the end of the sentence is never closed",
         edits=[("    if start >= 0:\n        chunks.append((kind, start, len(tags) - 1))\n", "")]),
    dict(exercise="bio-solution", name="b-after-b-merged",
         why="B-x right after an x entity continues it: two entities become one",
         edits=[(_CONTINUES, "continues = prefix in \"BI\" and start >= 0 and tag_type == kind")]),
    dict(exercise="bio-solution", name="type-cut-at-hyphen",
         why="the type is cut at its first hyphen: geo-loc becomes geo",
         edits=[("prefix, tag_type = tag[0], tag[2:]", "prefix, tag_type = tag[0], tag.split(\"-\")[1]")]),
    dict(exercise="bio-solution", name="bad-tag-read-as-o",
         why="a malformed tag is silently read as O instead of raising ValueError",
         edits=[("raise ValueError(f\"tag {i} is {tag!r}: expected 'O', 'B-<type>' or 'I-<type>'\")",
                 "prefix, tag_type = \"O\", \"\"")]),
    # --- entity-f1-solution: entity_f1 ----------------------------------------------------------------------------
    dict(exercise="entity-f1-solution", name="tag-level",
         why="tags compared one by one (non-O tags), not entities: partial entities earn credit",
         edits=[(_GOLD, "gold.update((n, i, tag) for i, tag in enumerate(t) if tag != \"O\")"),
                (_PRED, "pred.update((n, i, tag) for i, tag in enumerate(p) if tag != \"O\")")]),
    dict(exercise="entity-f1-solution", name="sentence-ignored",
         why="entities keyed without their sentence: the same span in two sentences counts as one",
         edits=[(_GOLD, "gold.update(chunk for chunk in bio_entities(t))"),
                (_PRED, "pred.update(chunk for chunk in bio_entities(p))")]),
    dict(exercise="entity-f1-solution", name="type-ignored",
         why="an entity is right when its span is, whatever its type",
         edits=[(_GOLD, "gold.update((n, s, e) for _, s, e in bio_entities(t))"),
                (_PRED, "pred.update((n, s, e) for _, s, e in bio_entities(p))")]),
    dict(exercise="entity-f1-solution", name="zero-over-zero-is-one",
         why="nothing predicted gives precision 1.0 (seqeval and conlleval give 0.0)",
         edits=[("precision = correct / len(pred) if pred else 0.0",
                 "precision = correct / len(pred) if pred else 1.0"),
                ("recall = correct / len(gold) if gold else 0.0", "recall = correct / len(gold) if gold else 1.0")]),
    dict(exercise="entity-f1-solution", name="precision-recall-swapped",
         why="precision divides by the gold entities and recall by the predicted ones",
         edits=[("precision = correct / len(pred) if pred else 0.0",
                 "precision = correct / len(gold) if gold else 0.0"),
                ("recall = correct / len(gold) if gold else 0.0", "recall = correct / len(pred) if pred else 0.0")]),
    dict(exercise="entity-f1-solution", name="macro-over-sentences",
         why="the average of per-sentence scores instead of counts over the corpus (micro)",
         edits=[("    correct = len(gold & pred)\n",
                 "    per = [(len({g for g in gold if g[0] == k} & {q for q in pred if q[0] == k}),\n"
                 "            len({q for q in pred if q[0] == k}), len({g for g in gold if g[0] == k}))\n"
                 "           for k in range(len(true_tags))]\n"
                 "    per = [(c / p if p else 0.0, c / g if g else 0.0) for c, p, g in per if p or g]\n"
                 "    if per:\n"
                 "        precision = sum(x for x, _ in per) / len(per)\n"
                 "        recall = sum(y for _, y in per) / len(per)\n"
                 "        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0\n"
                 "        return {\"precision\": precision, \"recall\": recall, \"f1\": f1}\n"
                 "    correct = len(gold & pred)\n")]),
    # --- word-tags-solution: word_tags -----------------------------------------------------------------------------
    dict(exercise="word-tags-solution", name="last-piece-wins",
         why="every piece of a word writes its tag, so the last piece's prediction is the word's (##rs for Lakers)",
         edits=[("if word is not None and word not in tagged:", "if word is not None:")]),
    dict(exercise="word-tags-solution", name="majority-of-pieces",
         why="a word takes the tag most of its pieces predicted, not its first piece's (the one trained on the label)",
         edits=[("    tags = [\"O\"] * n_words\n    tagged = set()\n",
                 "    votes: dict = {}\n"
                 "    for word, tag in zip(word_ids, piece_tags, strict=True):\n"
                 "        if word is not None:\n"
                 "            votes.setdefault(word, []).append(tag)\n"
                 "    return [max(votes[w], key=votes[w].count) if w in votes else \"O\"\n"
                 "            for w in range(n_words)]\n"
                 "    tags = [\"O\"] * n_words\n    tagged = set()\n")]),
    dict(exercise="word-tags-solution", name="cut-words-dropped",
         why="the words with no piece left are dropped: fewer tags than words, so the sentence no longer lines up",
         edits=[("    return tags\n", "    return [tags[w] for w in sorted(tagged)]\n")]),
    dict(exercise="word-tags-solution", name="piece-tags-returned",
         why="one tag per piece with [CLS] and [SEP] cut off, not one per word",
         edits=[("    tags = [\"O\"] * n_words\n",
                 "    return [t for w, t in zip(word_ids, piece_tags) if w is not None]\n"
                 "    tags = [\"O\"] * n_words\n")]),
    dict(exercise="word-tags-solution", name="one-piece-per-word",
         why="word w is read at position w + 1, as if every word were one piece after [CLS]",
         edits=[("    tags = [\"O\"] * n_words\n",
                 "    return [piece_tags[w + 1] if w + 1 < len(piece_tags) else \"O\" for w in range(n_words)]\n"
                 "    tags = [\"O\"] * n_words\n")]),
    # --- squad-solution: normalize_answer, f1_score -----------------------------------------------------------------
    dict(exercise="squad-solution", name="articles-before-punctuation",
         why="articles removed before punctuation: 'The-End' becomes 'end', not 'theend'",
         edits=[(_NORMALIZE, "text = _ARTICLES.sub(\" \", s.lower())\n"
                             "    return \" \".join(\"\".join(ch for ch in text if ch not in _PUNCTUATION).split())")]),
    dict(exercise="squad-solution", name="not-lower-cased",
         why="case kept: 'Paris' and 'paris' differ, 'The' is not removed",
         edits=[(_NORMALIZE, "text = \"\".join(ch for ch in s if ch not in _PUNCTUATION)\n"
                             "    return \" \".join(_ARTICLES.sub(\" \", text).split())")]),
    dict(exercise="squad-solution", name="unicode-punctuation-removed",
         why="every Unicode punctuation character removed (the official script keeps '–', '«', '’')",
         edits=[(_NORMALIZE, "import unicodedata\n"
                             "    text = \"\".join(ch for ch in s.lower()\n"
                             "                   if not unicodedata.category(ch).startswith(\"P\"))\n"
                             "    return \" \".join(_ARTICLES.sub(\" \", text).split())")]),
    dict(exercise="squad-solution", name="articles-inside-words",
         why="a, an, the removed inside words too ('banana' -> 'b'), not only as whole words",
         edits=[(_NORMALIZE, "text = \"\".join(ch for ch in s.lower() if ch not in _PUNCTUATION)\n"
                             "    return \" \".join(re.sub(\"(an|the)\", \" \", text).split())")]),
    dict(exercise="squad-solution", name="set-overlap",
         why="words in common counted as a set: repeats are ignored",
         edits=[(_SAME, "same = len(set(pred_tokens) & set(gold_tokens))"),
                ("precision, recall = same / len(pred_tokens), same / len(gold_tokens)",
                 "precision, recall = same / len(set(pred_tokens)), same / len(set(gold_tokens))")]),
    dict(exercise="squad-solution", name="f1-not-normalised",
         why="token F1 of the raw answers split on spaces (case, punctuation and articles count)",
         edits=[("pred_tokens = normalize_answer(prediction).split()", "pred_tokens = prediction.split()"),
                ("gold_tokens = normalize_answer(ground_truth).split()", "gold_tokens = ground_truth.split()")]),
    dict(exercise="squad-solution", name="empty-answers-match",
         why="two empty normalised answers score F1 1.0 (the official script gives 0.0)",
         edits=[("    if same == 0:\n        return 0.0\n",
                 "    if not pred_tokens and not gold_tokens:\n        return 1.0\n"
                 "    if same == 0:\n        return 0.0\n")]),
]
