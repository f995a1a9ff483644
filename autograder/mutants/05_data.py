"""Wrong implementations of chapter 05's exercises: each must lose points under the real nbgrader autograde."""

_DECODE = '''    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{path} is not UTF-8 (invalid byte at offset {exc.start}): convert it, e.g. iconv -t UTF-8"
        ) from exc'''
_COIN = "is_next = rng.random() < 0.5"
_BORROW = "if is_next and len(chunk) == 1 and i + 1 < len(document):"

MUTANTS = [
    # --- read-solution: read_text_file ------------------------------------------------------------------------------
    dict(
        exercise="read-solution",
        name="swallows-decode-errors",
        why="a non-UTF-8 file is decoded with errors='replace' instead of raising: garbage text, no error",
        edits=[(_DECODE, '    text = data.decode("utf-8", errors="replace")')],
    ),
    dict(
        exercise="read-solution",
        name="latin1-fallback",
        why="falls back to Latin-1 when UTF-8 fails, silently reading another encoding",
        edits=[(_DECODE, '    try:\n        text = data.decode("utf-8")\n    except UnicodeDecodeError:\n'
                         '        text = data.decode("latin-1")')],
    ),
    dict(
        exercise="read-solution",
        name="no-offset",
        why="the UTF-8 error does not say at which byte offset the file is broken",
        edits=[("(invalid byte at offset {exc.start})", "(invalid byte)")],
    ),
    dict(
        exercise="read-solution",
        name="no-nul-check",
        why="no NUL-byte check: a binary file that happens to be valid UTF-8 is returned as text",
        edits=[('    if b"\\x00" in data:\n        raise ValueError(f"{path} is binary (it contains NUL bytes), not a '
                'text file")\n', "")],
    ),
    dict(
        exercise="read-solution",
        name="whitespace-is-not-empty",
        why="only a 0-byte file counts as empty; a file of blank lines is returned",
        edits=[("if not text.strip():", "if not text:")],
    ),
    dict(
        exercise="read-solution",
        name="strips-the-text",
        why="returns text.strip(): the file's content is changed",
        edits=[("    return text\n", "    return text.strip()\n")],
    ),
    dict(
        exercise="read-solution",
        name="missing-file-returns-empty",
        why="a missing file gives '' instead of FileNotFoundError",
        edits=[('raise FileNotFoundError(f"{path} does not exist")', 'return ""')],
    ),
    dict(
        exercise="read-solution",
        name="error-without-file-name",
        why="the 'empty' error does not name the file",
        edits=[('raise ValueError(f"{path} is empty")', 'raise ValueError("the file is empty")')],
    ),
    # --- truncate-solution: truncate_seq_pair ---------------------------------------------------------------------
    dict(
        exercise="truncate-solution",
        name="trims-the-shorter",
        why="removes pieces from the shorter list instead of the longer",
        edits=[("if len(tokens_a) >= len(tokens_b) else tokens_b", "if len(tokens_a) < len(tokens_b) else tokens_b")],
    ),
    dict(
        exercise="truncate-solution",
        name="ties-trim-b",
        why="on equal lengths B is trimmed instead of A",
        edits=[("if len(tokens_a) >= len(tokens_b) else tokens_b", "if len(tokens_a) > len(tokens_b) else tokens_b")],
    ),
    dict(
        exercise="truncate-solution",
        name="always-front",
        why="always removes the first piece (no coin)",
        edits=[("if rng.random() < 0.5:", "if True:")],
    ),
    dict(
        exercise="truncate-solution",
        name="always-back",
        why="always removes the last piece (the coin is drawn but never says front)",
        edits=[("if rng.random() < 0.5:", "if rng.random() < 0.0:")],
    ),
    dict(
        exercise="truncate-solution",
        name="coin-inverted",
        why="rng.random() < 0.5 taken to mean the back instead of the front",
        edits=[("if rng.random() < 0.5:", "if rng.random() >= 0.5:")],
    ),
    dict(
        exercise="truncate-solution",
        name="one-coin-per-pair",
        why="one coin for the whole truncation: every piece comes off the same end",
        edits=[("    while len(tokens_a) + len(tokens_b) > max_num_tokens:",
                "    front = rng.random() < 0.5\n    while len(tokens_a) + len(tokens_b) > max_num_tokens:"),
               ("if rng.random() < 0.5:", "if front:")],
    ),
    dict(
        exercise="truncate-solution",
        name="off-by-one",
        why="trims while the total is >= max_num_tokens: one piece too many",
        edits=[("while len(tokens_a) + len(tokens_b) > max_num_tokens:",
                "while len(tokens_a) + len(tokens_b) >= max_num_tokens:")],
    ),
    # --- nsp-solution: sample_random_segments (the NotNext B) -----------------------------------------------------
    dict(
        exercise="nsp-solution",
        name="same-document-possible",
        why="draws among all documents: B can come from the current document",
        edits=[("other = rng.randint(0, len(documents) - 2)\n    other += other >= document_index  # skip the current "
                "document", "other = rng.randint(0, len(documents) - 1)")],
    ),
    dict(
        exercise="nsp-solution",
        name="skip-off-by-one",
        why="`>` instead of `>=` when skipping the current document: it can still be drawn, the last one never",
        edits=[("other += other >= document_index", "other += other > document_index")],
    ),
    dict(
        exercise="nsp-solution",
        name="always-next-document",
        why="B always from the next document instead of a random other one",
        edits=[("other = rng.randint(0, len(documents) - 2)\n    other += other >= document_index",
                "other = (document_index + 1) % len(documents)")],
    ),
    dict(
        exercise="nsp-solution",
        name="starts-at-first-sentence",
        why="B always starts at the document's first sentence",
        edits=[("document[rng.randint(0, len(document) - 1):]", "document")],
    ),
    dict(
        exercise="nsp-solution",
        name="never-starts-at-last-sentence",
        why="randint(0, len - 2): the last sentence never starts B",
        edits=[("rng.randint(0, len(document) - 1)", "rng.randint(0, max(0, len(document) - 2))")],
    ),
    dict(
        exercise="nsp-solution",
        name="stops-after-exceeding",
        why="`>` instead of `>=`: one sentence too many when a sentence end meets the target exactly",
        edits=[("if len(tokens) >= target_b_length:", "if len(tokens) > target_b_length:")],
    ),
    dict(
        exercise="nsp-solution",
        name="whole-rest-of-document",
        why="never stops: B is the whole rest of the document",
        edits=[("            break\n", "            pass\n")],
    ),
    # --- pairs-solution: create_instances_from_document -----------------------------------------------------------
    dict(
        exercise="pairs-solution",
        name="script-forces-notnext",
        why="as the original script: a one-sentence chunk is always NotNext (up to 61% NotNext on Wikipedia, by seed)",
        edits=[(_BORROW, "if False:")],
    ),
    dict(
        exercise="pairs-solution",
        name="coin-60-40",
        why="IsNext with probability 0.6: 60/40 labels",
        edits=[(_COIN, "is_next = rng.random() < 0.6")],
    ),
    dict(
        exercise="pairs-solution",
        name="always-isnext",
        why="the coin is never tossed: every chunk that can be split is IsNext",
        edits=[(_COIN, "is_next = True")],
    ),
    dict(
        exercise="pairs-solution",
        name="labels-swapped",
        why="label 1 for IsNext and 0 for NotNext",
        edits=[("label = 0\n", "label = 2\n"), ("label = 1\n", "label = 0\n"), ("label = 2\n", "label = 1\n")],
    ),
    dict(
        exercise="pairs-solution",
        name="no-put-back",
        why="the unused sentences of a NotNext chunk are dropped instead of put back",
        edits=[("i -= len(chunk) - a_end  # put the unused sentences back", "pass")],
    ),
    dict(
        exercise="pairs-solution",
        name="isnext-b-skips-a-sentence",
        why="an IsNext B starts one sentence after the split: B does not follow A",
        edits=[("tokens_b = [t for sentence in chunk[a_end:] for t in sentence]",
                "tokens_b = [t for sentence in chunk[a_end + 1:] for t in sentence]")],
    ),
    dict(
        exercise="pairs-solution",
        name="a-may-be-empty",
        why="a_end drawn from 0: A can be empty and the pair is lost",
        edits=[("rng.randint(1, len(chunk) - 1)", "rng.randint(0, len(chunk) - 1)")],
    ),
    dict(
        exercise="pairs-solution",
        name="b-target-ignores-a",
        why="the NotNext B is asked for the whole target length, not target - len(A)",
        edits=[("target_seq_length - len(tokens_a), rng)", "target_seq_length, rng)")],
    ),
    dict(
        exercise="pairs-solution",
        name="no-truncation",
        why="truncate_seq_pair is never called: pairs longer than the model input",
        edits=[("            truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng)\n", "")],
    ),
    dict(
        exercise="pairs-solution",
        name="notnext-excludes-document-0",
        why="sample_random_segments called with index 0 instead of the current document",
        edits=[("sample_random_segments(documents, document_index,", "sample_random_segments(documents, 0,")],
    ),
    # --- collate-solution: pad_and_stack --------------------------------------------------------------------------
    dict(
        exercise="collate-solution",
        name="pads-with-zero",
        why="pads with 0 instead of pad_id",
        edits=[('batch["input_ids"].fill_(pad_id)', 'batch["input_ids"].fill_(0)')],
    ),
    dict(
        exercise="collate-solution",
        name="attention-mask-all-ones",
        why="attention_mask 1 at padding too",
        edits=[('batch["attention_mask"][r, :n] = 1', 'batch["attention_mask"][r, :] = 1')],
    ),
    dict(
        exercise="collate-solution",
        name="segment-one-at-padding",
        why="token_type_ids 1 from B to the end of the row, padding included",
        edits=[('batch["token_type_ids"][r, a:n] = 1', 'batch["token_type_ids"][r, a:] = 1')],
    ),
    dict(
        exercise="collate-solution",
        name="segment-b-from-first-sep",
        why="the [SEP] after A gets segment 1",
        edits=[('batch["token_type_ids"][r, a:n] = 1', 'batch["token_type_ids"][r, a - 1:n] = 1')],
    ),
    dict(
        exercise="collate-solution",
        name="padding-not-special",
        why="special_tokens_mask marks [CLS] and [SEP] but not the padding",
        edits=[('batch["special_tokens_mask"].fill_(1)\n', ""),
               ('batch["special_tokens_mask"][r, 1:a - 1] = 0\n        batch["special_tokens_mask"][r, a:n - 1] = 0',
                'batch["special_tokens_mask"][r, [0, a - 1, n - 1]] = 1')],
    ),
    dict(
        exercise="collate-solution",
        name="max-length-ignored",
        why="always pads to the longest row, ignoring max_length",
        edits=[("T = max_length or max(len(r) for r in rows)", "T = max(len(r) for r in rows)")],
    ),
    dict(
        exercise="collate-solution",
        name="float-labels",
        why="next_sentence_label as a float tensor",
        edits=[('torch.tensor([inst.next_sentence_label for inst in instances])',
                'torch.tensor([inst.next_sentence_label for inst in instances], dtype=torch.float)')],
    ),
]
