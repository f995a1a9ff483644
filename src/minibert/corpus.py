# Generated from notebook 01_wordpiece.ipynb by minibert_course.export: edit the notebook, not this file.
"""Real text for the course: the English Wikipedia sample shipped in the PyPI package gensim (chapter 01).

Why a dump parser and not a ready-made text file: the sample is real wikitext, with templates, references,
tables and media links; stripping them with a real parser (mwparserfromhell) is part of building a corpus.
Article and paragraph boundaries are kept because next-sentence prediction (chapter 05) needs documents.
"""

from __future__ import annotations

import bz2
import importlib.util
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

__all__ = ["load_wikipedia_sample", "wikitext_to_paragraphs", "wikipedia_sample_path", "Article"]

WIKI_SAMPLE = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_REF = re.compile(r"<ref\b[^>]*/\s*>|<ref\b[^>]*>.*?</ref\s*>", re.S | re.I)  # self-closing first: <ref name="a/b" />
_MEDIA = re.compile(r"\[\[(?:file|image|category):(?:[^\[\]]|\[\[[^\[\]]*\]\])*\]\]", re.I)
_TABLE = re.compile(r"^\{\|.*?^\|\}", re.S | re.M)
_HEADING = re.compile(r"^[ \t]*=+[^\n]*=+[ \t]*$", re.M)  # "== Early life ==": a section break, not text


@dataclass
class Article:
    title: str
    paragraphs: list[str]


def wikipedia_sample_path() -> Path:
    """The English Wikipedia sample (CC BY-SA 3.0) that gensim ships as test data: 206 pages, 106 articles once
    redirects and other namespaces are skipped."""
    spec = importlib.util.find_spec("gensim")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "the Wikipedia sample comes from the package gensim: pip install --no-deps gensim==4.4.0"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / "test" / "test_data" / WIKI_SAMPLE
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: reinstall gensim (pip install --no-deps gensim==4.4.0)")
    return path


def wikitext_to_paragraphs(wikitext: str, min_words: int = 8) -> list[str]:
    """Plain-text paragraphs of one article: markup, references, tables, media and headings removed."""
    import mwparserfromhell

    for pattern in (_COMMENT, _REF, _MEDIA, _TABLE):
        wikitext = pattern.sub("", wikitext)
    wikitext = _HEADING.sub("\n", wikitext)  # a blank line in place of each heading ends the paragraph before it
    plain = mwparserfromhell.parse(wikitext).strip_code(normalize=True, collapse=True)
    paragraphs = []
    for block in re.split(r"\n\s*\n", plain):
        text = " ".join(line.strip() for line in block.split("\n") if line.strip())
        text = re.sub(r"\s+", " ", text).strip()
        if len(text.split()) >= min_words:  # drops list stubs, captions and leftovers of removed markup
            paragraphs.append(text)
    return paragraphs


def load_wikipedia_sample(path: str | Path | None = None, limit: int | None = None) -> list[Article]:
    """Articles (namespace 0, redirects skipped) of a MediaWiki XML dump, .xml or .xml.bz2.

    Raises:
        FileNotFoundError: no such file.
        ValueError: the file is not a (complete) MediaWiki XML dump; the message names the file.
    """
    path = Path(path) if path is not None else wikipedia_sample_path()
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist")
    opener = bz2.open if path.suffix == ".bz2" else open
    articles: list[Article] = []
    try:
        with opener(path, "rb") as f:
            for _, element in ET.iterparse(f):
                if not element.tag.endswith("}page") and element.tag != "page":
                    continue
                ns = element.findtext("{*}ns") or element.findtext("ns") or "0"
                title = element.findtext("{*}title") or element.findtext("title") or ""
                text = element.findtext(".//{*}text") or element.findtext(".//text") or ""
                element.clear()
                if ns != "0" or text.lstrip().lower().startswith("#redirect"):
                    continue
                articles.append(Article(title, wikitext_to_paragraphs(text)))
                if limit is not None and len(articles) >= limit:
                    break
    except (ET.ParseError, OSError, EOFError) as exc:
        raise ValueError(
            f"{path} is not a readable MediaWiki XML dump ({exc.__class__.__name__}: {exc}). "
            "Use the .xml or .xml.bz2 file exactly as downloaded."
        ) from exc
    if not articles:
        raise ValueError(f"{path} holds no articles (namespace 0 pages): is it a MediaWiki XML dump?")
    return articles
