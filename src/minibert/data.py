# Generated from notebook 05_data.ipynb by minibert_course.export: edit the notebook, not this file.
"""Pretraining data: corpora, sentences, NSP pairs as the original BERT data script builds them, collation
(chapter 05).

Why follow the script closely: its choices (target lengths, short sequences, where A ends, how B is truncated)
decide what NSP and MLM see; a casual re-implementation changes the task. Deliberate differences, all stated in
chapter 05: a NotNext B always comes from *another* document (the script tries 10 random draws); the short target
length is drawn per pair, and the IsNext coin is tossed first, which brings the labels back to 50/50 (the script
gives up to 61% NotNext on the Wikipedia sample, depending on the seed); on a tie `truncate_seq_pair` trims A
(the script trims B); a corpus that cannot be read fails with an error naming the file.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from minibert.masking import mask_tokens
from minibert.tokenization import BertTokenizer, save_vocab, train_wordpiece

__all__ = ["load_documents", "read_text_file", "load_text_folder", "split_document", "split_sentences",
           "create_nsp_instances", "create_instances_from_document", "sample_random_segments", "truncate_seq_pair",
           "NSPInstance", "pad_and_stack", "pad_rows", "tokenized_corpus", "PretrainingCollator", "word_ids_from_ids",
           "continuation_table"]


def read_text_file(path: str | Path) -> str:
    """The text of a UTF-8 text file, or an error that names the file and the problem.

    Raises:
        FileNotFoundError: no such file.
        ValueError: the file is empty, binary, or not UTF-8.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist")
    data = path.read_bytes()
    if b"\x00" in data:
        raise ValueError(f"{path} is binary (it contains NUL bytes), not a text file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{path} is not UTF-8 (invalid byte at offset {exc.start}): convert it, e.g. iconv -t UTF-8"
        ) from exc
    if not text.strip():
        raise ValueError(f"{path} is empty")
    return text


_ABBREVIATIONS = {"mr", "mrs", "ms", "dr", "prof", "st", "jr", "sr", "vs", "etc", "e.g", "i.e", "u.s", "no", "fig",
                  "c", "ca", "approx", "inc", "ltd", "co", "mt", "gen", "col", "lt", "sgt", "rev", "vol"}
_SENTENCE_END = re.compile(r"(?<=[.!?])([\"')\]]*)\s+(?=[\"'(\[]?[A-Z0-9])")  # group 1: closing quotes


def split_sentences(text: str) -> list[str]:
    """Sentences of a paragraph: split after . ! ? before a capital/digit, not after an abbreviation or initial."""
    sentences, start = [], 0
    for match in _SENTENCE_END.finditer(text):
        candidate = text[start:match.end(1)].strip()  # the sentence keeps its closing quote or bracket
        last_word = candidate.rsplit(" ", 1)[-1].rstrip("\"')]").rstrip(".!?").lower()
        if last_word in _ABBREVIATIONS or (len(last_word) == 1 and last_word.isalpha()):  # "Dr. Smith", "J. Smith"
            continue
        sentences.append(candidate)
        start = match.end()
    if text[start:].strip():
        sentences.append(text[start:].strip())
    return sentences


def load_text_folder(folder: str | Path) -> list[list[str]]:
    """Documents from a folder of .txt files: one file = one document, sentences split from its paragraphs."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder")
    files = sorted(folder.rglob("*.txt"))
    if not files:
        raise ValueError(f"{folder} has no .txt files")
    return [split_document(read_text_file(f)) for f in files]


def split_document(text: str) -> list[str]:
    """A document's sentences, paragraph by paragraph (blank lines separate paragraphs)."""
    return [s for paragraph in re.split(r"\n\s*\n", text) for s in split_sentences(" ".join(paragraph.split()))]


def load_documents(source: str | Path | Iterable[str] = "wikipedia", limit: int | None = None) -> list[list[str]]:
    """Documents (lists of sentences) from "wikipedia" (gensim's sample), "course" (the unlabelled training text of
    chapter 08's tasks: film reviews, plot summaries, tweets) or "course+wikipedia" (both), a folder of .txt files (one
    document per file), a single .txt file (one document), or an iterable of texts (one document each)."""
    if isinstance(source, str) and source == "wikipedia":
        from minibert.corpus import load_wikipedia_sample

        docs = [[s for p in a.paragraphs for s in split_sentences(p)] for a in load_wikipedia_sample(limit=limit)]
    elif isinstance(source, str) and source in ("course", "course+wikipedia"):
        from minibert.task_data import pretraining_texts  # chapter 08's data, its training splits only

        docs = [split_document(text) for text in pretraining_texts(wikipedia=source == "course+wikipedia")]
    elif isinstance(source, (str, Path)):
        path = Path(source)
        if path.is_dir():
            docs = load_text_folder(path)
        elif path.suffix == ".txt" or path.is_file():
            docs = [split_document(read_text_file(path))]
        else:
            raise FileNotFoundError(f"{path} does not exist (expected 'wikipedia', a folder or a .txt file)")
    else:
        docs = [split_document(text) for text in source]
    docs = [d for d in docs if d][:limit]
    if not docs:
        raise ValueError(f"no text found in {source!r}")
    return docs


def truncate_seq_pair(tokens_a: list, tokens_b: list, max_num_tokens: int, rng: random.Random) -> None:
    """Trim a pair in place to at most max_num_tokens pieces: one piece at a time from the longer list, at a random
    end (as the original data script, so truncation does not always cut the same side)."""
    while len(tokens_a) + len(tokens_b) > max_num_tokens:
        longer = tokens_a if len(tokens_a) >= len(tokens_b) else tokens_b
        if rng.random() < 0.5:
            del longer[0]
        else:
            longer.pop()


def sample_random_segments(
    documents: Sequence[Sequence[list[int]]], document_index: int, target_b_length: int, rng: random.Random
) -> list[int]:
    """A NotNext B: consecutive sentences from a random start in a random *other* document."""
    if len(documents) < 2:
        raise ValueError("NotNext pairs need at least two documents")
    other = rng.randint(0, len(documents) - 2)
    other += other >= document_index  # skip the current document
    document = documents[other]
    tokens: list[int] = []
    for sentence in document[rng.randint(0, len(document) - 1):]:
        tokens.extend(sentence)
        if len(tokens) >= target_b_length:
            break
    return tokens


@dataclass
class NSPInstance:
    tokens_a: list[int]
    tokens_b: list[int]
    next_sentence_label: int  # 0 = IsNext (B follows A), 1 = NotNext (B from another document)


def _draw_target_length(rng: random.Random, max_num_tokens: int, short_seq_prob: float) -> int:
    """Usually fill the input (max_num_tokens); with probability short_seq_prob a shorter target, 2..max."""
    return rng.randint(2, max_num_tokens) if rng.random() < short_seq_prob else max_num_tokens


def create_instances_from_document(
    documents: Sequence[Sequence[list[int]]],
    document_index: int,
    max_seq_length: int = 128,
    short_seq_prob: float = 0.1,
    rng: random.Random | None = None,
) -> list[NSPInstance]:
    """NSP pairs from one document, as create_pretraining_data.py builds them, with two corrections (see the text):
    the short target length is drawn per pair, and the IsNext/NotNext coin is tossed before looking at the chunk."""
    rng = rng or random.Random()
    document = documents[document_index]
    max_num_tokens = max_seq_length - 3  # [CLS] A [SEP] B [SEP]
    target_seq_length = _draw_target_length(rng, max_num_tokens, short_seq_prob)
    instances, chunk, length, i = [], [], 0, 0
    while i < len(document):
        chunk.append(document[i])
        length += len(document[i])
        if i == len(document) - 1 or length >= target_seq_length:  # the chunk is complete: make one pair
            is_next = rng.random() < 0.5
            if is_next and len(chunk) == 1 and i + 1 < len(document):
                i += 1  # a one-sentence chunk takes the document's next sentence as its B
                chunk.append(document[i])
            a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
            tokens_a = [t for sentence in chunk[:a_end] for t in sentence]
            if is_next and len(chunk) >= 2:
                label = 0
                tokens_b = [t for sentence in chunk[a_end:] for t in sentence]
            else:
                label = 1
                tokens_b = sample_random_segments(documents, document_index, target_seq_length - len(tokens_a), rng)
                i -= len(chunk) - a_end  # put the unused sentences back
            truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng)
            if tokens_a and tokens_b:
                instances.append(NSPInstance(tokens_a, tokens_b, label))
            chunk, length = [], 0
            target_seq_length = _draw_target_length(rng, max_num_tokens, short_seq_prob)
        i += 1
    return instances


def create_nsp_instances(
    documents: Sequence[Sequence[list[int]]],
    max_seq_length: int = 128,
    short_seq_prob: float = 0.1,
    dupe_factor: int = 1,
    seed: int = 12345,
) -> list[NSPInstance]:
    """All NSP pairs of a tokenized corpus (documents of sentences of ids), shuffled; `dupe_factor` passes."""
    rng = random.Random(seed)
    documents = [d for d in documents if d]
    instances = [
        instance
        for _ in range(dupe_factor)
        for index in range(len(documents))
        for instance in create_instances_from_document(documents, index, max_seq_length, short_seq_prob, rng)
    ]
    rng.shuffle(instances)
    return instances


def pad_and_stack(
    instances: Sequence[NSPInstance], cls_id: int, sep_id: int, pad_id: int, max_length: int | None = None
) -> dict[str, torch.Tensor]:
    """A padded batch: input_ids, token_type_ids, attention_mask, special_tokens_mask (B, T);
    next_sentence_label (B,)."""
    rows = [[cls_id, *inst.tokens_a, sep_id, *inst.tokens_b, sep_id] for inst in instances]
    T = max_length or max(len(r) for r in rows)
    batch = {k: torch.zeros(len(rows), T, dtype=torch.long) for k in
             ("input_ids", "token_type_ids", "attention_mask", "special_tokens_mask")}
    batch["input_ids"].fill_(pad_id)
    batch["special_tokens_mask"].fill_(1)
    for r, (row, inst) in enumerate(zip(rows, instances, strict=True)):
        n, a = len(row), len(inst.tokens_a) + 2
        batch["input_ids"][r, :n] = torch.tensor(row)
        batch["token_type_ids"][r, a:n] = 1
        batch["attention_mask"][r, :n] = 1
        batch["special_tokens_mask"][r, 1:a - 1] = 0
        batch["special_tokens_mask"][r, a:n - 1] = 0
    batch["next_sentence_label"] = torch.tensor([inst.next_sentence_label for inst in instances])
    return batch


def tokenized_corpus(corpus: str, limit_documents: int | None, vocab_file: Path, vocab_size: int,
                     purpose: str = "pretraining with NSP") -> tuple[BertTokenizer, list[list[list[int]]], int]:
    """The one corpus pipeline of every pretraining run (chapter 06's, chapter 10's): load the documents, train the
    vocabulary into `vocab_file` with chapter 01's `train_wordpiece` (or reuse the one there), and tokenize every
    sentence. Returns the tokenizer, the documents as lists of sentence ids, and how many documents to hold out for
    evaluation (1 in 20, at least 2).

    The sentences are tokenized by `tokenizers` with the pieces of `vocab_file`, the same pieces as the from-scratch
    tokenizer but in Rust (20k sentences in a moment), and in the same way whether the vocabulary was just trained or
    reused, so that a resumed run sees the ids a fresh one saw."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    docs = load_documents(corpus, limit=limit_documents)
    if len(docs) < 4:
        raise ValueError(f"{len(docs)} documents: {purpose} needs at least 4 (2 of them are held out for evaluation)")
    if not vocab_file.exists():
        vocab_file.parent.mkdir(parents=True, exist_ok=True)
        save_vocab(train_wordpiece([s for d in docs for s in d], vocab_size=vocab_size), vocab_file)
    tokenizer = BertTokenizer(vocab_file)
    fast = Tokenizer(models.WordPiece(tokenizer.vocab, unk_token="[UNK]"))
    fast.normalizer = normalizers.BertNormalizer(lowercase=True)
    fast.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenized = [[e.ids for e in fast.encode_batch(d, add_special_tokens=False)] for d in docs]
    return tokenizer, tokenized, max(2, len(tokenized) // 20)


def pad_rows(rows: Sequence[Sequence[int]], value: int = 0, length: int | None = None) -> torch.Tensor:
    """(B, T): each row, then `value` up to T = `length` (default: the longest row). The package's one padding
    (fine-tuning features, MLM rows, sentence features); `pad_and_stack` above is the exercise that writes it out
    for NSP pairs, with segments and the special-token mask."""
    T = max(len(r) for r in rows) if length is None else length
    return torch.tensor([[*row, *[value] * (T - len(row))] for row in rows])


def word_ids_from_ids(input_ids: torch.Tensor, is_continuation: torch.Tensor, special_tokens_mask: torch.Tensor
                      ) -> torch.Tensor:
    """(B, T) word index of every piece, -1 at special tokens: whole-word masking on id batches, vectorized.

    The id twin of chapter 04's `word_ids_from_tokens`: a piece starts a new word unless its vocabulary entry is a
    `##` continuation and the piece before it is not special. `is_continuation` is a (V,) bool table made once per
    vocabulary (`continuation_table`), so a batch costs one lookup and one cumulative sum, no Python loop.
    """
    special = special_tokens_mask.bool()  # (B, T)
    after_special = torch.ones_like(special)
    after_special[:, 1:] = special[:, :-1]  # position 0 follows nothing: it starts a word
    starts = ~special & (~is_continuation[input_ids] | after_special)  # (B, T)
    return (starts.long().cumsum(dim=1) - 1).masked_fill(special, -1)


def continuation_table(tokenizer) -> torch.Tensor:
    """(V,) bool: True for the vocabulary's `##` pieces, which continue the word before them."""
    table = torch.zeros(len(tokenizer), dtype=torch.bool)
    table[[i for token, i in tokenizer.vocab.items() if token.startswith("##")]] = True
    return table


class PretrainingCollator:
    """Pads NSP pairs and masks them *dynamically*: a new MLM mask every time a batch is made (chapter 04).

    Args:
        tokenizer: supplies the special ids and the vocabulary.
        max_length: pad every batch to this length (default: the longest pair of the batch).
        generator: a seeded torch.Generator makes the masks repeatable.
        whole_word_mask: all pieces of a word are targets together (chapter 04), words read from the vocabulary's
            `##` pieces.
        **mask_kw: passed to `mask_tokens` (mlm_probability, mode, ...).
    """

    def __init__(self, tokenizer, max_length: int | None = None, generator: torch.Generator | None = None,
                 whole_word_mask: bool = False, **mask_kw):
        self.cls_id, self.sep_id = tokenizer.vocab["[CLS]"], tokenizer.vocab["[SEP]"]
        self.pad_id, self.mask_id = tokenizer.vocab["[PAD]"], tokenizer.vocab["[MASK]"]
        self.vocab_size = len(tokenizer)
        self.max_length = max_length
        self.generator = generator
        self.is_continuation = continuation_table(tokenizer) if whole_word_mask else None
        self.mask_kw = mask_kw

    def __call__(self, instances: Sequence[NSPInstance]) -> dict[str, torch.Tensor]:
        batch = pad_and_stack(instances, self.cls_id, self.sep_id, self.pad_id, self.max_length)
        special = batch.pop("special_tokens_mask")
        word_ids = None
        if self.is_continuation is not None:
            word_ids = word_ids_from_ids(batch["input_ids"], self.is_continuation, special)
        batch["input_ids"], batch["labels"] = mask_tokens(
            batch["input_ids"], special, vocab_size=self.vocab_size, mask_token_id=self.mask_id,
            attention_mask=batch["attention_mask"], generator=self.generator, word_ids=word_ids, **self.mask_kw,
        )
        return batch
