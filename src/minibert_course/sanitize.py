"""Student text made safe to render: the manually graded markdown answers that the formgrader and the feedback
pages show, and the outputs of graded cells.

`sanitize_markdown` keeps markdown as the student wrote it (headings, lists, emphasis, code, tables, math, links and
images) and neutralises the active HTML it may hold. Markdown is not HTML, so the text is not passed through an HTML
sanitizer as a whole (that would turn `a < b` into `a &lt; b` and break code): code and math are left alone, and in
the rest each HTML tag is kept only when nh3 (Ammonia, a maintained sanitizer) keeps it unchanged under the
allowlist below; nh3's cleaned version replaces it when it drops an attribute or a URL, and a tag that nh3 removes
(`<script>`, `<iframe>`, `<svg>`, `<object>`, `<style>`, `<form>`, `<meta>`, ...) is escaped, so that it shows as
text. Link and image URLs must be http(s) or mailto (images: http(s) or a non-SVG `data:image`), and MathJax
commands that make links or load code (`\\href`, `\\unicode`, `\\require`, ...) are defused.

The result is then rendered with nbconvert's own markdown renderer (what the formgrader and the feedback use) and
every tag of that HTML must pass the same check; when one does not (markdown that this scanner reads differently from
the renderer), the answer is shown as a code block instead: readable for the grader, inert in the browser.
"""

from __future__ import annotations

import html
import re

import nh3

# ---- the allowlist: what nbconvert's markdown renderer emits, and harmless inline HTML ---------------------------

TAGS = {
    "a", "abbr", "b", "blockquote", "br", "caption", "cite", "code", "col", "colgroup", "dd", "del", "details",
    "dfn", "div", "dl", "dt", "em", "figcaption", "figure", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img",
    "input", "ins", "kbd", "li", "mark", "ol", "p", "pre", "q", "s", "samp", "small", "span", "strike", "strong",
    "sub", "summary", "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "tt", "u", "ul", "var", "wbr",
}
ATTRIBUTES = {
    "*": {"class", "title"},
    "a": {"href"},
    "img": {"src", "alt", "width", "height"},
    **{f"h{n}": {"id"} for n in range(1, 7)},
    "th": {"style", "align", "colspan", "rowspan"},
    "td": {"style", "align", "colspan", "rowspan"},
    "ol": {"start"},
    "li": {"value"},
    "col": {"span"},
    "colgroup": {"span"},
    "details": {"open"},
    "input": {"disabled", "checked"},  # the task-list checkbox of the renderer
}
TAG_ATTRIBUTE_VALUES = {"input": {"type": {"checkbox"}}}
LINK_SCHEMES = {"http", "https", "mailto"}
IMAGE_SCHEMES = {"http", "https"}
_DATA_IMAGE = re.compile(r"data:image/(?:png|gif|jpeg|jpg|webp|bmp|avif)(?:;[^,]*)?,", re.I)
# MathJax (the formgrader's formulas) control words that make links, set CSS or ids, or load extensions
_MATHJAX_HAZARD = re.compile(r"\\(?=(?:href|url|class|cssId|style|unicode|require|html|data)(?![A-Za-z]))")

# ---- HTML syntax (CommonMark's raw HTML: exactly the tags a browser reads the same way) ------------------------

_WS = r"[ \t\n\f\r]"
_ATTR_NAME = r"[A-Za-z_:][A-Za-z0-9_.:-]*"
_ATTR_VALUE = r"(?:[^\"'=<>`\x00-\x20]+|'[^']*'|\"[^\"]*\")"
_OPEN_TAG = re.compile(rf"<([A-Za-z][A-Za-z0-9-]*)((?:{_WS}+{_ATTR_NAME}(?:{_WS}*={_WS}*{_ATTR_VALUE})?)*){_WS}*/?>")
_CLOSE_TAG = re.compile(rf"</([A-Za-z][A-Za-z0-9-]*){_WS}*>")
_ATTR_ITEM = re.compile(rf"{_WS}+({_ATTR_NAME})(?:{_WS}*={_WS}*({_ATTR_VALUE}))?")
_AUTOLINK = re.compile(r"<([A-Za-z][A-Za-z0-9+.-]{1,31}:[^ <>\x00-\x20]*)>")
_EMAIL_AUTOLINK = re.compile(r"<[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                             r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*>")
# a tag of a table, tested by nh3 inside the element it belongs in (alone, the HTML parser drops it)
_CONTEXT = {"td": "<table><tr>", "th": "<table><tr>", "tr": "<table>", "thead": "<table>", "tbody": "<table>",
            "tfoot": "<table>", "caption": "<table>", "colgroup": "<table>", "col": "<table><colgroup>"}


def url_ok(tag: str, attr: str, value: str) -> bool:
    """Whether a (decoded) href or src may stay: links http(s), mailto or relative; images http(s), a non-SVG
    data:image, or empty. Spaces and control characters that browsers ignore in URLs are ignored here too."""
    v = re.sub(r"[\t\n\r]", "", value.strip(" \t\n\f\r\x00\x01\x02\x03\x04\x05\x06\x07\x08\x0b\x0e\x0f\x10\x11\x12"
                                             "\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f"))
    scheme = re.match(r"([A-Za-z][A-Za-z0-9+.\-]*):", v)
    if tag == "img" and attr == "src":
        if not v:
            return True
        if scheme is None:
            return False
        return scheme.group(1).lower() in IMAGE_SCHEMES or bool(_DATA_IMAGE.match(v))
    if scheme is None:
        return re.match(r"[^/?#]*:", v) is None  # a colon before any path: not a plain relative URL
    return scheme.group(1).lower() in LINK_SCHEMES


def _attribute_filter(tag: str, attr: str, value: str) -> str | None:
    if attr in ("href", "src") and not url_ok(tag, attr, value):
        return None
    return value


CLEANER = nh3.Cleaner(tags=TAGS, attributes=ATTRIBUTES, tag_attribute_values=TAG_ATTRIBUTE_VALUES,
                      attribute_filter=_attribute_filter, url_schemes=LINK_SCHEMES | IMAGE_SCHEMES | {"data"},
                      filter_style_properties={"text-align"}, strip_comments=True, link_rel=None)


def sanitize_html(fragment: str) -> str:
    """An HTML fragment, sanitized by nh3 under the course's allowlist."""
    return CLEANER.clean(fragment)


# ---- one tag -----------------------------------------------------------------------------------------------------


def _attributes(tag: str) -> dict[str, str] | None:
    """The attributes of a well-formed open tag, names lowercased and values decoded; None with a duplicate."""
    out: dict[str, str] = {}
    match = _OPEN_TAG.fullmatch(tag)
    if match is None:
        return None
    for name, value in _ATTR_ITEM.findall(match.group(2)):
        if value[:1] in ("'", '"'):
            value = value[1:-1]
        name = name.lower()
        if name in out:
            return None
        out[name] = html.unescape(value)
    return out


def _cleaned_tag(tag: str) -> str | None:
    """The open tag as nh3 keeps it (its first tag of that name in nh3's output), or None when nh3 drops it."""
    name = _OPEN_TAG.match(tag).group(1).lower()
    if name not in TAGS:
        return None
    out = CLEANER.clean(_CONTEXT.get(name, "") + tag)
    found = re.search(rf"<{name}(?:{_WS}+[^ \t\n\f\r\"'>/=]+=\"[^\"]*\")*{_WS}*/?>", out)
    if found is None or (name == "input" and 'type="checkbox"' not in found.group(0)):
        return None  # an input is kept only as the renderer's task-list checkbox
    return found.group(0)


def _kept_as_is(tag: str, cleaned: str | None) -> bool:
    if cleaned is None:
        return False
    mine = _attributes(tag)
    return mine is not None and mine == _attributes(cleaned)


def _escaped(text: str, index: int) -> bool:
    """Whether text[index] is backslash-escaped in markdown."""
    count = 0
    while index - count - 1 >= 0 and text[index - count - 1] == "\\":
        count += 1
    return count % 2 == 1


# ---- markdown: code and math are left alone; HTML, link URLs and MathJax commands are checked elsewhere -----------

_FENCE_OPEN = re.compile(r"^((?:[ \t]*>)*[ \t]*(?:(?:[-+*]|\d{1,9}[.)])[ \t]+)*)(`{3,}|~{3,})(.*)$")
_PROTECTED = re.compile(
    r"(?P<code>(?<!`)(?P<ticks>`+)(?!`).+?(?<!`)(?P=ticks)(?!`))"
    r"|(?P<math>(?<!\\)\$\$.+?(?<!\\)\$\$"
    r"|(?<!\\)\\\\\[.+?(?<!\\)\\\\\]"
    r"|(?<!\\)\\\\\(.+?(?<!\\)\\\\\)"
    r"|\\begin\{(?P<env>[a-z]*\*?)\}.*?\\end\{(?P=env)\}"
    r"|(?<![$\\])\$.+?(?<![$\\])\$)",
    re.S,
)
_BLANK_LINE = re.compile(r"\n[ \t]*\n")


def _fenced(text: str) -> list[tuple[bool, str]]:
    """(is a fenced code block, text) in order."""
    parts: list[tuple[bool, str]] = []
    prose: list[str] = []
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        opening = _FENCE_OPEN.match(lines[i].rstrip("\r\n"))
        if opening and not (opening.group(2)[0] == "`" and "`" in opening.group(3)):
            fence = opening.group(2)
            closing = re.compile(rf"^(?:[ \t]*>)*[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
            end = next((k for k in range(i + 1, len(lines)) if closing.match(lines[k].rstrip("\r\n"))), len(lines) - 1)
            parts.append((False, "".join(prose)))
            prose = []
            parts.append((True, "".join(lines[i:end + 1])))
            i = end + 1
            continue
        prose.append(lines[i])
        i += 1
    parts.append((False, "".join(prose)))
    return [p for p in parts if p[1]]


def _segments(text: str) -> list[tuple[str, str]]:
    """("code" | "math" | "prose", text) in order: fenced blocks and code spans, math, and the rest."""
    out: list[tuple[str, str]] = []
    for is_code, part in _fenced(text):
        if is_code:
            out.append(("code", part))
            continue
        pos = start = 0
        while (m := _PROTECTED.search(part, pos)) is not None:
            if _BLANK_LINE.search(m.group(0)) or (m.group("code") and _escaped(part, m.start())):
                pos = m.start() + 1  # not a span: a paragraph ends inside it, or its backtick is escaped
                continue
            out.append(("prose", part[start:m.start()]))
            out.append(("code" if m.group("code") else "math", m.group(0)))
            pos = start = m.end()
        out.append(("prose", part[start:]))
    return [s for s in out if s[1]]


# elements that run, load or embed content, change how the HTML around them is parsed, or make forms
DANGEROUS = {
    "script", "style", "iframe", "frame", "frameset", "object", "embed", "applet", "svg", "math", "form", "input",
    "button", "select", "option", "textarea", "meta", "link", "base", "title", "xmp", "noscript", "noembed",
    "noframes", "plaintext", "template", "portal", "audio", "video", "source", "track", "picture", "image",
    "marquee", "isindex", "keygen", "html", "head", "body", "dialog", "slot", "listing",
}


def _dangerous_start(text: str, index: int) -> bool:
    """`<script`, `</style` ...: the start of a dangerous element even without a well-formed tag."""
    match = re.match(r"</?([A-Za-z][A-Za-z0-9-]*)", text[index:index + 40])
    return bool(match) and match.group(1).lower() in DANGEROUS


def _clean_tags(text: str) -> str:
    out: list[str] = []
    i = 0
    while (j := text.find("<", i)) != -1:
        out.append(text[i:j])
        i = j + 1
        if _escaped(text, j):
            out.append("<")
            continue
        closing = _CLOSE_TAG.match(text, j)
        autolink = _AUTOLINK.match(text, j)
        email = _EMAIL_AUTOLINK.match(text, j)
        opening = _OPEN_TAG.match(text, j)
        if closing and closing.group(1).lower() in TAGS:
            out.append(closing.group(0))
            i = closing.end()
        elif autolink and url_ok("a", "href", html.unescape(autolink.group(1))):
            out.append(autolink.group(0))
            i = autolink.end()
        elif email:
            out.append(email.group(0))
            i = email.end()
        elif opening and (cleaned := _cleaned_tag(opening.group(0))) is not None:
            out.append(opening.group(0) if _kept_as_is(opening.group(0), cleaned) else cleaned)
            i = opening.end()
        elif opening or closing or text[j + 1:j + 2] in ("!", "?") or _dangerous_start(text, j):
            out.append("&lt;")  # a tag that nh3 removes, a comment, a declaration: shown as text
        else:
            out.append("<")  # `a < b`, `x<y`: text for the renderer too (the rendered check makes sure)
    out.append(text[i:])
    return "".join(out)


def _is_image(text: str, close: int) -> bool:
    """Whether the `]` at `close` ends the text of an image (`![...]`)."""
    depth = 0
    for k in range(close - 1, -1, -1):
        if text[k] == "]" and not _escaped(text, k):
            depth += 1
        elif text[k] == "[" and not _escaped(text, k):
            if depth == 0:
                return k > 0 and text[k - 1] == "!" and not _escaped(text, k - 1)
            depth -= 1
    return False


def _link_url(dest: str) -> str:
    """A markdown link destination as the renderer reads it: backslash escapes and entities resolved."""
    return html.unescape(re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", dest))


UNSAFE_LINK = "#unsafe-link-removed"


def _clean_links(text: str) -> str:
    out: list[str] = []
    i = 0
    while (j := text.find("](", i)) != -1:
        k = j + 2
        while k < len(text) and text[k] in " \t\n":
            k += 1
        start = k
        if k < len(text) and text[k] == "<":
            end = text.find(">", k)
            if end == -1 or "\n" in text[k:end]:
                out.append(text[i:j + 2])
                i = j + 2
                continue
            dest, end = text[k + 1:end], end + 1
        else:
            depth, end = 0, k
            while end < len(text):
                c = text[end]
                if c == "\\" and end + 1 < len(text):
                    end += 2
                    continue
                if c in " \t\n" or ord(c) < 0x20 or (c == ")" and depth == 0):
                    break
                depth += {"(": 1, ")": -1}.get(c, 0)
                end += 1
            dest = text[k:end]
        image = _is_image(text, j)
        if dest and not url_ok("img" if image else "a", "src" if image else "href", _link_url(dest)):
            out.append(text[i:start] + ("" if image else UNSAFE_LINK))
        else:
            out.append(text[i:end])
        i = max(end, j + 2)
    out.append(text[i:])
    text = "".join(out)

    def definition(m: re.Match) -> str:  # [label]: url
        dest = m.group(2)
        dest = dest[1:-1] if dest.startswith("<") else dest
        return m.group(0) if url_ok("a", "href", _link_url(dest)) else m.group(1) + UNSAFE_LINK

    return re.sub(r"(?m)^([ \t]{0,3}\[(?:[^\]\\\n]|\\.)+\]:[ \t]*\n?[ \t]*)(<[^<>\n]*>|\S+)", definition, text)


def _defuse_mathjax(text: str) -> str:
    return _MATHJAX_HAZARD.sub(r"\\ ", text)  # `\href` -> `\ href`: a TeX space and letters


def _render(markdown: str) -> str:
    """The HTML that nbconvert's HTMLExporter makes of a markdown cell (the formgrader's and the feedback's)."""
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

    renderer = IPythonRenderer(escape=False, attachments={}, anchor_link_text="¶", exclude_anchor_links=False)
    return MarkdownWithMath(renderer=renderer).render(markdown)


def html_is_safe(fragment: str, mathjax: bool = True) -> bool:
    """Every `<` of the fragment opens a well-formed tag that nh3 keeps unchanged, or closes an allowed one (so a
    browser reads no other tag, attribute or URL into it); with `mathjax`, its text holds no hazardous MathJax
    command either."""
    i, text = 0, []
    while (j := fragment.find("<", i)) != -1:
        text.append(fragment[i:j])
        closing = _CLOSE_TAG.match(fragment, j)
        opening = _OPEN_TAG.match(fragment, j)
        if closing and closing.group(1).lower() in TAGS:
            i = closing.end()
        elif opening and _kept_as_is(opening.group(0), _cleaned_tag(opening.group(0))):
            i = opening.end()
        else:
            return False
    text.append(fragment[i:])
    return not (mathjax and _MATHJAX_HAZARD.search(html.unescape("".join(text))))


def _renders_safely(markdown: str, mathjax: bool = True) -> bool:
    try:
        rendered = _render(markdown)
    except Exception:  # e.g. an image of a missing attachment: the formgrader could not show the notebook
        return False
    return html_is_safe(rendered, mathjax=mathjax)


def as_code_block(text: str) -> str:
    """The text as a fenced code block (longer fence than any backtick run in it), with a note for the grader."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") else text + "\n"
    return (f"*(This answer held markup that cannot be shown safely; it is shown as plain text.)*\n\n"
            f"{fence}text\n{body}{fence}\n")


MAX_CHARS = 200_000  # a longer answer is shown as a code block without being scanned


def sanitize_markdown(text: str) -> str:
    """Markdown with every active HTML construct neutralised (see the module docstring); unchanged when it holds
    none. Code blocks, code spans and math are kept as written."""
    text = str(text)
    if len(text) > MAX_CHARS:
        return as_code_block(text)
    parts = []
    for kind, part in _segments(text):
        if kind == "prose":
            part = _defuse_mathjax(_clean_links(_clean_tags(part)))
        elif kind == "math":
            part = _defuse_mathjax(part)
        parts.append(part)
    cleaned = "".join(parts)
    if _renders_safely(cleaned):
        return cleaned
    fallback = as_code_block(text)
    if _renders_safely(fallback, mathjax=False):  # MathJax does not read code blocks
        return fallback
    return "*(This answer held markup that cannot be shown safely.)*\n"


# ---- outputs -------------------------------------------------------------------------------------------------------

_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*")


def _text(value) -> str:
    return "".join(map(str, value)) if isinstance(value, list) else str(value)


def plain_outputs(outputs: list[dict]) -> list[dict]:
    """Cell outputs as text only: streams, errors, and results' text/plain (and a base64 PNG). HTML, JavaScript,
    SVG, widgets and output metadata are dropped: the submission runs where it could write them, and nbconvert
    puts them into the formgrader's and the feedback's pages as they are."""
    out = []
    for o in outputs:
        kind = o.get("output_type")
        if kind == "stream":
            out.append({"output_type": "stream", "name": "stderr" if o.get("name") == "stderr" else "stdout",
                        "text": _text(o.get("text", ""))})
        elif kind == "error":
            out.append({"output_type": "error", "ename": _text(o.get("ename", "")),
                        "evalue": _text(o.get("evalue", "")),
                        "traceback": [_text(t) for t in o.get("traceback", []) or []]})
        elif kind in ("execute_result", "display_data"):
            data = o.get("data") or {}
            kept = {"text/plain": _text(data["text/plain"])} if "text/plain" in data else {}
            png = data.get("image/png")
            if isinstance(png, str) and _BASE64.fullmatch(png):
                kept["image/png"] = png
            if not kept:
                continue
            result = {"output_type": kind, "data": kept, "metadata": {}}
            if kind == "execute_result":
                count = o.get("execution_count")
                result["execution_count"] = count if isinstance(count, int) and not isinstance(count, bool) else None
            out.append(result)
    return out
