"""Students' markdown answers are sanitized before the formgrader and the feedback render them
(minibert_course.sanitize): active HTML is neutralised, honest markdown is kept as written."""

from __future__ import annotations

import json
from html.parser import HTMLParser

import pytest
from conftest import SOLUTIONS
from nbconvert.exporters import HTMLExporter

from minibert_course.sanitize import TAGS, plain_outputs, sanitize_markdown, url_ok


def rendered(markdown: str) -> str:
    """The HTML that nbconvert's HTMLExporter (formgrader, feedback) makes of a markdown cell."""
    return HTMLExporter().markdown2html({"cell": {}, "resources": {}}, markdown)


class Active(HTMLParser):
    """An independent check of rendered HTML: tags outside the allowlist, event handlers, unsafe URLs, comments."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: list[tuple] = []

    def handle_starttag(self, tag, attrs):
        if tag not in TAGS:
            self.found.append(("tag", tag))
        for name, value in attrs:
            if name.startswith("on") or name in ("srcdoc", "formaction", "action", "data", "http-equiv"):
                self.found.append(("attribute", tag, name))
            if name in ("href", "src") and value is not None and not url_ok(tag, name, value):
                self.found.append(("url", tag, name, value))
            if value and "javascript:" in value.replace("\t", "").replace("\n", "").lower():
                self.found.append(("javascript", tag, name, value))

    handle_startendtag = handle_starttag

    def handle_comment(self, data):
        self.found.append(("comment", data))


def active(markdown: str) -> list[tuple]:
    parser = Active()
    parser.feed(rendered(markdown))
    parser.close()
    return parser.found


PAYLOADS = {
    "script": "Answer.\n\n<script>fetch('/api/contents/pwned.txt', {method: 'PUT'}); window.__pwned = 1</script>",
    "img onerror": "See <img src=x onerror=\"window.__pwned = 1\"> here.",
    "iframe javascript": '<iframe src="javascript:window.__pwned = 1"></iframe>',
    "a javascript": '<a href="javascript:window.__pwned = 1">click</a>',
    "a entity javascript": '<a href="jav&#x61;script:alert(1)">x</a> <a href="java\tscript:alert(1)">y</a>',
    "svg onload": "<svg onload=\"window.__pwned = 1\"><circle r=4 /></svg>",
    "svg script": "<svg><script>window.__pwned = 1</script></svg>",
    "object": '<object data="data:text/html,<script>alert(1)</script>"></object>',
    "embed": '<embed src="javascript:alert(1)">',
    "style": "<style>body { display: none }</style>",
    "form": '<form action="/api/contents"><button formaction="javascript:alert(1)">go</button></form>',
    "meta refresh": '<meta http-equiv="refresh" content="0;url=javascript:alert(1)">',
    "markdown link": "[x](javascript:alert(1))",
    "markdown link entity": "[x](jav&#x61;script:alert(1)) [y](<javascript:alert(1)>)",
    "markdown image": "![x](javascript:alert(1)) ![svg](data:image/svg+xml;base64,PHN2Zz4=)",
    "reference link": "[r]: javascript:alert(1)\n\nSee [this][r].",
    "autolink": "<javascript:alert(1)>",
    "vbscript": '<a href="vbscript:msgbox(1)">x</a>',
    "data html link": "[x](data:text/html;base64,PHNjcmlwdD4=)",
    "event on allowed tag": '<b onmouseover="alert(1)">bold</b> <details open ontoggle=alert(1)>d</details>',
    "tag in attribute of unknown tag": '<x title="<img src=x onerror=alert(1)>">t</x>',
    "slash separated attributes": "<img/src=x/onerror=alert(1)>",
    "unclosed tag across cells": '<img src="x" alt="',
    "comment": "<!-- <img src=x onerror=alert(1)> -->",
    "html block": "<div>\n<img src=x onerror=alert(1)>\n</div>",
    "mermaid block": "```mermaid\n<img src=x onerror=alert(1)>\n```",
    "mathjax href": r"$\href{javascript:alert(1)}{click}$",
}

# dangerous in a browser or across cells, but not to the renderer as they are: sanitized all the same
INACTIVE_RAW = {"unclosed tag across cells", "mathjax href", "slash separated attributes"}


@pytest.mark.parametrize("name", sorted(PAYLOADS))
def test_active_html_is_neutralised(name):
    source = PAYLOADS[name]
    if name not in INACTIVE_RAW:
        assert active(source), "the payload is active when rendered as it is"
    out = sanitize_markdown(source)
    assert active(out) == [], (out, rendered(out))
    html = rendered(out).lower()
    for word in ("<script", "<iframe", "<svg", "<object", "<embed", "<style", "<form", "<meta"):
        assert word not in html, (word, html)
    assert "\\href" not in html
    assert sanitize_markdown(out) == out, "sanitizing twice changes nothing more"


def test_a_neutralised_tag_shows_as_text_and_the_rest_stays():
    out = sanitize_markdown("**Answer**: the head is small. <script>alert(1)</script> <img src=x onerror=alert(1)>")
    assert out.startswith("**Answer**: the head is small.")
    html = rendered(out)
    assert "<strong>Answer</strong>" in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<img>" in html or '<img src="">' in html  # the image without its handler
    assert sanitize_markdown('<a href="https://ok.example" onclick="x()">ok</a>') == '<a href="https://ok.example">ok</a>'
    assert sanitize_markdown("[x](javascript:alert(1))") == "[x](#unsafe-link-removed)"


HONEST = [
    "# A heading\n\n## Another *one*\n\nText with **bold**, _emphasis_ and ~~strike~~.",
    "- one\n- two\n  - nested\n\n1. first\n2. second",
    "Inline code with a tag: `<b>` and `<script>alert(1)</script>`, and a < b, b > a, x<y.",
    "```python\nhtml = '<script>alert(1)</script>'\nprint(html)\n```",
    "~~~\n<img src=x onerror=alert(1)>\n~~~",
    "| model | loss |\n|:--|--:|\n| BERT | 1.5 |",
    "Math: $p(x_i \\mid \\tilde{x})$, $a<b$ and $$L = -\\sum_{i \\in M} \\log p(x_i)$$",
    "[BERT](https://arxiv.org/abs/1810.04805), <https://example.com>, [mail](mailto:a@example.com), [anchor](#top)",
    "![plot](https://example.com/p.png) ![inline](data:image/png;base64,iVBORw0KGgo=)",
    "> a quote\n\n---\n\nH<sub>2</sub>O, x<sup>2</sup>, <b>bold</b>, <kbd>Ctrl</kbd>, line<br>break",
    "- [ ] a task\n- [x] done\n\nTerm\n: definition",
    "Right: all three tasks start from the same pretrained checkpoint ([CLS] classifier, `[MASK]` 80%).",
]


@pytest.mark.parametrize("source", HONEST)
def test_honest_markdown_is_kept_as_written(source):
    assert sanitize_markdown(source) == source
    assert active(source) == []


def test_code_keeps_its_text_readable():
    source = "```python\nx = '<script>alert(1)</script>'\n```\n\nUse `<b>` for bold."
    html = rendered(sanitize_markdown(source))
    assert "&lt;script&gt;" in html and "<code>&lt;b&gt;</code>" in html


def test_every_markdown_cell_of_the_course_is_kept_as_written():
    cells = ["".join(c["source"]) for path in SOLUTIONS for c in json.loads(path.read_text(encoding="utf-8"))["cells"]
             if c["cell_type"] == "markdown"]
    assert len(cells) > 100
    changed = [text[:80] for text in cells if sanitize_markdown(text) != text]
    assert changed == []


def test_markdown_the_scanner_cannot_read_is_shown_as_a_code_block():
    source = "```mermaid\ngraph <img src=x onerror=alert(1)>\n```"
    out = sanitize_markdown(source)
    assert "shown as plain text" in out and active(out) == []
    assert "&lt;img src=x onerror=alert(1)&gt;" in rendered(out)  # readable for the grader
    long = "<script>x</script>" * 20_000
    assert active(sanitize_markdown(long)) == []


def test_outputs_keep_only_text():
    outputs = [
        {"output_type": "stream", "name": "stdout", "text": "ok\n"},
        {"output_type": "display_data", "data": {"text/html": "<script>alert(1)</script>",
                                                 "application/javascript": "alert(1)", "text/plain": "<obj>"},
         "metadata": {"filenames": {"image/png": "\" onerror=\"alert(1)"}}},
        {"output_type": "display_data", "data": {"image/png": "\"><script>alert(1)</script>"}},
        {"output_type": "execute_result", "data": {"text/plain": "3"}, "execution_count": 4, "metadata": {}},
        {"output_type": "error", "ename": "AssertionError", "evalue": "x", "traceback": ["AssertionError: x"]},
    ]
    kept = plain_outputs(outputs)
    assert [o["output_type"] for o in kept] == ["stream", "display_data", "execute_result", "error"]
    assert kept[1] == {"output_type": "display_data", "data": {"text/plain": "<obj>"}, "metadata": {}}
    assert kept[2]["execution_count"] == 4 and kept[3]["traceback"] == ["AssertionError: x"]
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x", outputs=[nbformat.from_dict(o) for o in kept])])
    nbformat.validate(nb)
    html, _ = HTMLExporter(template_name="classic").from_notebook_node(nb)
    assert "alert(1)" not in html

