"""Wrong implementations of chapter 01's exercises: each must lose points under the real nbgrader autograde."""

_NO_MATCH = (
    "if piece is None:  # nothing matches here: the whole word is unknown\n                return [self.unk_token]"
)

MUTANTS = [
    # --- wordpiece-solution: greedy longest-match-first WordPiece ------------------------------------------------
    dict(
        exercise="wordpiece-solution",
        name="max-chars-ge",
        why="`>=` instead of `>` at max_input_chars_per_word: a word of exactly the limit becomes [UNK]",
        edits=[("if len(word) > self.max_input_chars_per_word:", "if len(word) >= self.max_input_chars_per_word:")],
    ),
    dict(
        exercise="wordpiece-solution",
        name="max-chars-hardcoded",
        why="the limit hard-coded to 100: the max_input_chars_per_word argument is ignored",
        edits=[("if len(word) > self.max_input_chars_per_word:", "if len(word) > 100:")],
    ),
    dict(
        exercise="wordpiece-solution",
        name="no-length-limit",
        why="no length check: a long word that can be spelled is split into pieces instead of [UNK]",
        edits=[("if len(word) > self.max_input_chars_per_word:", "if False:")],
    ),
    dict(
        exercise="wordpiece-solution",
        name="no-hash-prefix",
        why="continuation pieces looked up without the `##` prefix",
        edits=[('candidate = word[start:end] if start == 0 else "##" + word[start:end]',
                "candidate = word[start:end]")],
    ),
    dict(
        exercise="wordpiece-solution",
        name="hash-on-every-piece",
        why="`##` also on the first piece of a word",
        edits=[('candidate = word[start:end] if start == 0 else "##" + word[start:end]',
                'candidate = "##" + word[start:end]')],
    ),
    dict(
        exercise="wordpiece-solution",
        name="shortest-match",
        why="the inner loop grows `end` from start+1: shortest match first instead of longest",
        edits=[("end = len(word)", "end = start + 1"), ("while start < end:", "while end <= len(word):"),
               ("end -= 1", "end += 1")],
    ),
    dict(
        exercise="wordpiece-solution",
        name="partial-unk",
        why="an unmatched rest becomes [UNK] after the pieces found so far, instead of the whole word becoming [UNK]",
        edits=[(_NO_MATCH, "if piece is None:\n                pieces.append(self.unk_token)\n                break")],
    ),
    dict(
        exercise="wordpiece-solution",
        name="unk-hardcoded",
        why='"[UNK]" written out instead of self.unk_token: the unk_token argument is ignored',
        edits=[("return [self.unk_token]\n        pieces = []", 'return ["[UNK]"]\n        pieces = []'),
               (_NO_MATCH, 'if piece is None:\n                return ["[UNK]"]')],
    ),
    dict(
        exercise="wordpiece-solution",
        name="wordpiece-reference-package",
        why="tokenize_word delegates to the installed minibert package instead of the student's own loop",
        edits=[("    def tokenize_word(self, word: str) -> list[str]:\n",
                "    def tokenize_word(self, word: str) -> list[str]:\n"
                "        from minibert.tokenization import WordPieceTokenizer as Reference\n\n"
                "        return Reference(self.vocab, self.unk_token, self.max_input_chars_per_word)"
                ".tokenize_word(word)\n\n"
                "    def _own_tokenize_word(self, word: str) -> list[str]:\n")],
    ),
    dict(
        exercise="wordpiece-solution",
        name="reference-class-imported",
        why="the class is replaced by the installed package's WordPieceTokenizer (imported at the end of the cell)",
        edits=[("return pieces", "return pieces\n\n\nfrom minibert.tokenization import WordPieceTokenizer  # noqa")],
    ),
    # --- input-format-solution: [CLS] A [SEP] B [SEP] with segment ids --------------------------------------------
    dict(
        exercise="input-format-solution",
        name="b-segment-zero",
        why="every position gets segment 0, B included",
        edits=[("segments += [1] * (len(tokens_b) + 1)", "segments += [0] * (len(tokens_b) + 1)")],
    ),
    dict(
        exercise="input-format-solution",
        name="last-sep-segment-0",
        why="the final [SEP] gets segment 0 instead of 1",
        edits=[("segments += [1] * (len(tokens_b) + 1)", "segments += [1] * len(tokens_b) + [0]")],
    ),
    dict(
        exercise="input-format-solution",
        name="first-sep-segment-1",
        why="the [SEP] after A is counted in segment B",
        edits=[("segments = [0] * len(tokens)",
                "segments = [0] * (len(tokens) - 1) + [0 if tokens_b is None else 1]")],
    ),
    dict(
        exercise="input-format-solution",
        name="no-final-sep",
        why="B is not closed by a [SEP]",
        edits=[("tokens += [*tokens_b, SEP]", "tokens += list(tokens_b)"),
               ("segments += [1] * (len(tokens_b) + 1)", "segments += [1] * len(tokens_b)")],
    ),
    dict(
        exercise="input-format-solution",
        name="empty-b-dropped",
        why="`if tokens_b:` instead of `is not None`: an empty B loses its segment and its [SEP]",
        edits=[("if tokens_b is not None:", "if tokens_b:")],
    ),
    dict(
        exercise="input-format-solution",
        name="mutates-caller-list",
        why="the caller's tokens_a list is framed in place (and so changed) instead of building a new list",
        edits=[("tokens = [CLS, *tokens_a, SEP]",
                "tokens = tokens_a if isinstance(tokens_a, list) else list(tokens_a)\n"
                "    tokens.insert(0, CLS)\n    tokens.append(SEP)")],
    ),
    dict(
        exercise="input-format-solution",
        name="segment-boundary-hardcoded",
        why="segment 1 starts at position 6, which only fits the visible example",
        edits=[("segments += [1] * (len(tokens_b) + 1)", "segments = [0] * 6 + [1] * (len(tokens) - 6)")],
    ),
    dict(
        exercise="input-format-solution",
        name="tuples-returned",
        why="tuples returned instead of lists",
        edits=[("return tokens, segments", "return tuple(tokens), tuple(segments)")],
    ),
    dict(
        exercise="input-format-solution",
        name="input-format-reference-package",
        why="build_inputs imported from the installed minibert package instead of written",
        edits=[("return tokens, segments",
                "return tokens, segments\n\n\nfrom minibert.tokenization import build_inputs  # noqa")],
    ),
    # --- windows-solution: overlapping windows for the 512-position limit -----------------------------------------
    dict(
        exercise="windows-solution",
        name="no-overlap",
        why="windows advance by their full size: the stride is ignored",
        edits=[("step = size - stride", "step = size")],
    ),
    dict(
        exercise="windows-solution",
        name="step-is-stride",
        why="windows advance by `stride` instead of size - stride",
        edits=[("step = size - stride", "step = stride")],
    ),
    dict(
        exercise="windows-solution",
        name="no-room-for-specials",
        why="windows of max_length items: no room left for [CLS] and [SEP]",
        edits=[("size = max_length - 2", "size = max_length")],
    ),
    dict(
        exercise="windows-solution",
        name="max-length-ignored",
        why="window size from BERT's 512 instead of the max_length argument",
        edits=[("size = max_length - 2", "size = MAX_POSITIONS - 2")],
    ),
    dict(
        exercise="windows-solution",
        name="stop-off-by-one",
        why="`>` instead of `>=` when checking the end: an input that ends exactly at a window gets an empty extra one",
        edits=[("if start + size >= len(ids):", "if start + size > len(ids):")],
    ),
    dict(
        exercise="windows-solution",
        name="starts-over-whole-input",
        why="a window starts at every step up to the end of the input: extra windows inside the last one",
        edits=[("    windows = []\n",
                "    return [ids[s:s + size] for s in range(0, len(ids), step)]\n    windows = []\n")],
    ),
    dict(
        exercise="windows-solution",
        name="last-window-aligned-to-end",
        why="the last window is moved back to end at the input's end, so it does not start at k * (size - stride)",
        edits=[("windows.append(ids[start:start + size])",
                "windows.append(ids[max(0, min(start, len(ids) - size)):][:size])")],
    ),
    dict(
        exercise="windows-solution",
        name="stride-check-off-by-one",
        why="stride == max_length - 2 is accepted (no room to advance)",
        edits=[("if stride < 0 or stride >= size:", "if stride < 0 or stride > size:")],
    ),
    dict(
        exercise="windows-solution",
        name="negative-stride-accepted",
        why="a negative stride is accepted (windows with gaps)",
        edits=[("if stride < 0 or stride >= size:", "if stride >= size:")],
    ),
    dict(
        exercise="windows-solution",
        name="empty-input-no-window",
        why="an empty input gives no window instead of one empty window",
        edits=[("    if len(ids) <= size:\n", "    if not ids:\n        return []\n    if len(ids) <= size:\n")],
    ),
    dict(
        exercise="windows-solution",
        name="input-type-kept",
        why="the input is sliced as given: a string or tuple gives windows that are not lists",
        edits=[("    ids = list(ids)\n", "")],
    ),
    # --- train-vocab-solution: training a WordPiece vocabulary with tokenizers ------------------------------------
    dict(
        exercise="train-vocab-solution",
        name="no-special-tokens",
        why="the trainer gets no special tokens: [PAD], [CLS], ... are missing from the vocabulary",
        edits=[(", special_tokens=special_tokens", "")],
    ),
    dict(
        exercise="train-vocab-solution",
        name="tutorial-special-order",
        why="special tokens in the order of the Hugging Face tutorial ([UNK] first), not BERT's ids 0-4",
        edits=[("special_tokens=special_tokens",
                'special_tokens=["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]')],
    ),
    dict(
        exercise="train-vocab-solution",
        name="vocab-size-ignored",
        why="vocab_size hard-coded to the default 8000",
        edits=[("vocab_size=vocab_size", "vocab_size=8000")],
    ),
    dict(
        exercise="train-vocab-solution",
        name="min-frequency-ignored",
        why="min_frequency hard-coded to the default 2",
        edits=[("min_frequency=min_frequency", "min_frequency=2")],
    ),
    dict(
        exercise="train-vocab-solution",
        name="lowercase-ignored",
        why="BertNormalizer() with its default lowercase=True: lowercase=False is ignored",
        edits=[("normalizers.BertNormalizer(lowercase=lowercase)", "normalizers.BertNormalizer()")],
    ),
    dict(
        exercise="train-vocab-solution",
        name="no-normalizer",
        why="no normalizer: the vocabulary is cased and keeps accents",
        edits=[("    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=lowercase)\n", "")],
    ),
    dict(
        exercise="train-vocab-solution",
        name="tutorial-normalizer",
        why="NFD + Lowercase instead of BertNormalizer: accents are not stripped",
        edits=[("normalizers.BertNormalizer(lowercase=lowercase)",
                "normalizers.Sequence([normalizers.NFD(), normalizers.Lowercase()] if lowercase else [])")],
    ),
    dict(
        exercise="train-vocab-solution",
        name="whitespace-pretokenizer",
        why="pre_tokenizers.Whitespace() instead of BertPreTokenizer: runs of punctuation stay one word",
        edits=[("pre_tokenizers.BertPreTokenizer()", "pre_tokenizers.Whitespace()")],
    ),
    dict(
        exercise="train-vocab-solution",
        name="whitespace-split-pretokenizer",
        why="pre_tokenizers.WhitespaceSplit() instead of BertPreTokenizer: punctuation is glued to words",
        edits=[("pre_tokenizers.BertPreTokenizer()", "pre_tokenizers.WhitespaceSplit()")],
    ),
    dict(
        exercise="train-vocab-solution",
        name="train-vocab-reference-package",
        why="train_wordpiece delegates to the installed minibert package",
        edits=[("    tokenizer = Tokenizer(models.WordPiece(unk_token=UNK))\n",
                "    from minibert.tokenization import train_wordpiece as reference\n\n"
                "    return reference(texts, vocab_size, min_frequency, lowercase)\n"
                "    tokenizer = Tokenizer(models.WordPiece(unk_token=UNK))\n")],
    ),
]
