"""Tests of `minibert.corpus`: the gensim Wikipedia sample, hand-written MediaWiki dumps and clear errors."""

from __future__ import annotations

import bz2
import re
import xml.etree.ElementTree as ET

import pytest

from minibert.corpus import Article, load_wikipedia_sample, wikipedia_sample_path, wikitext_to_paragraphs

MARKUP = ("{{", "}}", "[[", "]]", "<ref", "</ref", "{|", "|}", "<!--", "==")

TINY_DUMP = """<?xml version="1.0" encoding="utf-8"?>
<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" version="0.10" xml:lang="en">
  <siteinfo><sitename>Wikipedia</sitename></siteinfo>
  <page>
    <title>Ada Lovelace</title>
    <ns>0</ns>
    <id>1</id>
    <revision>
      <id>11</id>
      <text xml:space="preserve">{{Infobox person|name=Ada Lovelace|birth_date=1815}}
'''Ada Lovelace''' was an English mathematician who worked with [[Charles Babbage|the inventor Babbage]] on \
the Analytical Engine.&lt;ref name="b"&gt;Smith, ''Ada'', 2001, p. 3.&lt;/ref&gt; She wrote the first program.
[[File:x.jpg|thumb|cap]]

== Early life ==

She was born in London in 1815, the only legitimate child of the poet Lord Byron.
</text>
    </revision>
  </page>
  <page>
    <title>Lovelace</title>
    <ns>0</ns>
    <id>2</id>
    <redirect title="Ada Lovelace" />
    <revision>
      <id>12</id>
      <text xml:space="preserve">#REDIRECT [[Ada Lovelace]] and a few more words to pass the length filter</text>
    </revision>
  </page>
  <page>
    <title>Talk:Ada Lovelace</title>
    <ns>1</ns>
    <id>3</id>
    <revision>
      <id>13</id>
      <text xml:space="preserve">This talk page discusses whether the article should mention the engine at all.</text>
    </revision>
  </page>
</mediawiki>
"""


@pytest.fixture(scope="module")
def sample() -> list[Article]:
    return load_wikipedia_sample()


@pytest.fixture(scope="module")
def sample_paragraphs(sample) -> list[str]:
    return [p for article in sample for p in article.paragraphs]


# --- the real sample --------------------------------------------------------------------------------------------


def test_sample_path_is_the_gensim_bz2_dump():
    path = wikipedia_sample_path()
    assert path.is_file()
    assert path.name.endswith(".bz2")
    assert "gensim" in path.parts


def test_sample_has_106_articles_starting_with_anarchism(sample):
    assert len(sample) == 106
    assert sample[0].title == "Anarchism"
    assert all(isinstance(a, Article) for a in sample)


def test_sample_articles_are_namespace_0_without_redirects(sample):
    # The expected titles come from an independent parse of the same dump.
    root = ET.parse(bz2.open(wikipedia_sample_path())).getroot()
    expected = [
        page.findtext("{*}title")
        for page in root.findall("{*}page")
        if page.findtext("{*}ns") == "0"
        and not (page.findtext(".//{*}text") or "").lstrip().lower().startswith("#redirect")
    ]
    assert [a.title for a in sample] == expected
    assert not any(a.title.startswith(("Talk:", "User:", "Wikipedia:", "Template:")) for a in sample)


def test_sample_every_article_has_paragraphs(sample):
    assert all(a.paragraphs for a in sample), [a.title for a in sample if not a.paragraphs]


def test_sample_paragraphs_have_no_markup(sample_paragraphs):
    assert len(sample_paragraphs) > 1000
    for marker in MARKUP:
        hits = [p for p in sample_paragraphs if marker in p]
        assert not hits, f"{len(hits)} paragraphs contain {marker!r}, e.g. {hits[0][:120]!r}"


@pytest.mark.parametrize("marker", ["|", "''"])
def test_sample_paragraphs_rarely_contain_leftovers(sample_paragraphs, marker):
    # A few media captions with unbalanced brackets leave "thumb|" behind, and ambiguous quotes in the source
    # such as ''Iliad'''s leave apostrophes: they must stay a tiny minority.
    hits = [p for p in sample_paragraphs if marker in p]
    assert len(hits) <= 0.005 * len(sample_paragraphs), hits[:3]


def test_sample_paragraphs_have_at_least_8_words(sample_paragraphs):
    short = [p for p in sample_paragraphs if len(p.split()) < 8]
    assert not short, short[:3]


def test_sample_paragraphs_are_single_spaced(sample_paragraphs):
    assert not [p for p in sample_paragraphs if p != p.strip() or "  " in p or "\n" in p]


def test_sample_paragraphs_are_not_section_headings(sample_paragraphs):
    raw = bz2.open(wikipedia_sample_path()).read().decode("utf-8")
    headings = {h.strip() for h in re.findall(r"^==+([^=\n]+?)==+[ \t]*$", raw, re.M)}
    assert len(headings) > 100
    leaked = [p for p in sample_paragraphs if p in headings]
    assert not leaked, f"{len(leaked)} paragraphs are bare section headings, e.g. {leaked[:3]}"


def test_limit_returns_first_articles(sample):
    limited = load_wikipedia_sample(limit=3)
    assert len(limited) == 3
    assert limited == sample[:3]


# --- errors -----------------------------------------------------------------------------------------------------


def test_missing_path(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_wikipedia_sample(tmp_path / "nope.xml.bz2")


def test_text_file_that_is_not_xml(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("These are plain notes, not a MediaWiki dump.\n", encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(str(path))):
        load_wikipedia_sample(path)


def test_bz2_suffix_on_uncompressed_file(tmp_path):
    path = tmp_path / "fake.xml.bz2"
    path.write_text(TINY_DUMP, encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(str(path))):
        load_wikipedia_sample(path)


def test_truncated_bz2(tmp_path):
    path = tmp_path / "cut.xml.bz2"
    path.write_bytes(wikipedia_sample_path().read_bytes()[:20000])
    with pytest.raises(ValueError, match=re.escape(str(path))):
        load_wikipedia_sample(path)


def test_xml_without_pages(tmp_path):
    path = tmp_path / "empty.xml"
    path.write_text('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/"><siteinfo/></mediawiki>')
    with pytest.raises(ValueError, match=re.escape(str(path))):
        load_wikipedia_sample(path)


def test_xml_with_only_redirects_and_talk_pages(tmp_path):
    path = tmp_path / "none.xml"
    kept = TINY_DUMP.split("<page>")
    path.write_text("<page>".join([kept[0], kept[2], kept[3]]), encoding="utf-8")
    with pytest.raises(ValueError, match="no articles"):
        load_wikipedia_sample(path)


# --- a tiny hand-written dump -----------------------------------------------------------------------------------


@pytest.fixture
def tiny_articles(tmp_path) -> list[Article]:
    path = tmp_path / "tiny.xml"
    path.write_text(TINY_DUMP, encoding="utf-8")
    return load_wikipedia_sample(path)


def test_tiny_dump_keeps_only_the_article(tiny_articles):
    assert [a.title for a in tiny_articles] == ["Ada Lovelace"]


def test_tiny_dump_paragraphs(tiny_articles):
    paragraphs = tiny_articles[0].paragraphs
    assert paragraphs == [
        "Ada Lovelace was an English mathematician who worked with the inventor Babbage on the Analytical Engine. "
        "She wrote the first program.",
        "She was born in London in 1815, the only legitimate child of the poet Lord Byron.",
    ]


def test_tiny_dump_has_no_markup_or_removed_content(tiny_articles):
    text = " ".join(tiny_articles[0].paragraphs)
    assert "the inventor Babbage" in text
    for gone in (*MARKUP, "''", "|", "Infobox", "Smith", "cap", "x.jpg", "thumb", "Charles", "REDIRECT", "talk page"):
        assert gone not in text, gone


def test_tiny_dump_bz2_equals_plain(tmp_path, tiny_articles):
    path = tmp_path / "tiny.xml.bz2"
    path.write_bytes(bz2.compress(TINY_DUMP.encode("utf-8")))
    assert load_wikipedia_sample(path) == tiny_articles


# --- wikitext_to_paragraphs -------------------------------------------------------------------------------------


def test_wikitext_link_text_kept_target_dropped():
    assert wikitext_to_paragraphs("The [[United Kingdom|British]] crown ruled a great many overseas colonies.") == [
        "The British crown ruled a great many overseas colonies."
    ]


def test_wikitext_removes_references_templates_and_comments():
    text = (
        "Albedo{{efn|diffuse}} is the fraction of sunlight<ref>Coakley 2003.</ref> that a surface"
        '<ref name="x" /> reflects<!-- check -->, from zero to one in value.'
    )
    assert wikitext_to_paragraphs(text) == [
        "Albedo is the fraction of sunlight that a surface reflects, from zero to one in value."
    ]


def test_wikitext_removes_media_with_nested_links_and_categories():
    text = (
        "[[File:Earth.jpg|thumb|The [[Earth]] seen from [[Apollo 17]]]]\n"
        "The Earth is the third planet from the Sun and the only known home of life.\n"
        "[[Category:Planets]] [[Image:Sun.png|left|Sun]]"
    )
    assert wikitext_to_paragraphs(text) == [
        "The Earth is the third planet from the Sun and the only known home of life."
    ]


def test_wikitext_removes_tables():
    text = (
        "Intro sentence with more than eight words in it, before a table.\n"
        '{| class="wikitable"\n|-\n| one || two || three || four || five || six || seven || eight\n|}\n'
    )
    assert wikitext_to_paragraphs(text) == ["Intro sentence with more than eight words in it, before a table."]


def test_wikitext_splits_on_blank_lines_and_joins_lines():
    text = "First line of the paragraph\ncontinues on this second line.\n\nThen a second paragraph of nine words in it."
    assert wikitext_to_paragraphs(text) == [
        "First line of the paragraph continues on this second line.",
        "Then a second paragraph of nine words in it.",
    ]


def test_wikitext_min_words():
    text = "Too short to keep.\n\nThis paragraph is long enough to be kept by default."
    assert wikitext_to_paragraphs(text) == ["This paragraph is long enough to be kept by default."]
    assert wikitext_to_paragraphs(text, min_words=1) == [
        "Too short to keep.",
        "This paragraph is long enough to be kept by default.",
    ]


def test_wikitext_empty():
    assert wikitext_to_paragraphs("") == []
    assert wikitext_to_paragraphs("{{Infobox only|a=b}}\n[[Category:Nothing]]") == []


def test_wikitext_heading_not_glued_to_following_text():
    # The usual layout of a dump: the heading line is directly followed by the section's text.
    text = "== Early life ==\nShe was born in London in 1815 to the poet Lord Byron and his wife."
    assert wikitext_to_paragraphs(text) == [
        "She was born in London in 1815 to the poet Lord Byron and his wife."
    ], "the section heading 'Early life' leaked into the paragraph: headings are not removed"


def test_wikitext_heading_alone_is_not_a_paragraph():
    text = (
        "=== Russian Revolution and other uprisings of the 1910s ===\n\n"
        "The revolution of 1917 changed almost everything there."
    )
    assert wikitext_to_paragraphs(text) == ["The revolution of 1917 changed almost everything there."], (
        "an eight-word section heading survives as a paragraph: headings are not removed"
    )


# --- references: self-closing ones whose attributes contain a slash ---------------------------------------------
# `<ref name="a/b" />` is a complete, self-closing reference. Read as an opening tag, it would swallow everything up
# to the next `</ref>`: the article's own text between two references would vanish without any error. Every
# paragraph below has at least 8 words around its references, so the default min_words keeps it.

LEAD = "Alpha beta gamma delta epsilon zeta."
MIDDLE = "The text that follows must stay in the paragraph intact here."
TAIL = "More words to keep after the second reference too."


@pytest.mark.parametrize("ref", ['<ref name="a/b" />', "<ref name=x/>", '<ref name="http://x.org/a/" />',
                                 '<ref name="a/b"/>', '<REF NAME="a/b" />', "<ref name=x />"])
def test_wikitext_self_closing_ref_keeps_the_following_text(ref):
    text = f"{LEAD}{ref} {MIDDLE}<ref>cite</ref> {TAIL}"
    expected = [f"{LEAD} {MIDDLE} {TAIL}"]
    got = wikitext_to_paragraphs(text)
    assert got == expected, f"{ref}: expected {expected}, got {got}"
    assert "cite" not in got[0] and "<ref" not in got[0].lower() and "/>" not in got[0], got


def test_wikitext_ref_pair_with_slash_in_name_removes_only_its_content():
    text = f'{LEAD}<ref name="a/b">inner citation words</ref> {MIDDLE}<ref name="http://x.org/a/">cite</ref> {TAIL}'
    assert wikitext_to_paragraphs(text) == [f"{LEAD} {MIDDLE} {TAIL}"]


def test_wikitext_self_closing_ref_does_not_swallow_later_paragraphs():
    text = (f'{LEAD}<ref name="a/b" />\n{MIDDLE}\n\n'
            f"A second paragraph with quite enough words to be kept.<ref>cite</ref>\n\n{TAIL}")
    assert wikitext_to_paragraphs(text) == [
        f"{LEAD} {MIDDLE}",
        "A second paragraph with quite enough words to be kept.",
        TAIL,
    ]


def test_wikitext_closing_ref_tag_with_space():
    text = f'{LEAD}<ref group="n">cite</ref > {MIDDLE}'
    assert wikitext_to_paragraphs(text) == [f"{LEAD} {MIDDLE}"]


def test_wikitext_min_words_counts_the_text_after_a_self_closing_ref():
    """Six words before the reference, four after: only the whole paragraph (10 words) reaches min_words=9."""
    text = f'{LEAD}<ref name="a/b" /> Four more words here.<ref>cite</ref>'
    assert wikitext_to_paragraphs(text, min_words=9) == [f"{LEAD} Four more words here."]
    assert wikitext_to_paragraphs(text, min_words=11) == []
