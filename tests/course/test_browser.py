"""The course in a real browser: headless Chromium (Debian's), driven by Playwright.

1. A student's lab (`make lab`, as the README runs it, as root with the --allow-root the Makefile adds): chapter 04,
   answered, opened in JupyterLab; Run > Run All Cells; then the page must show a matplotlib image, a rendered
   widget (the chapter's sliders), every visible test's "OK" and no error output.
2. The instructor's formgrader (`make formgrader`) on the course that `make grade` built for this session's class
   run: it must list the chapters as assignments and a graded submission.
3. The formgrader on a course of its own, graded by `make grade`'s code: a manually graded markdown answer holding a
   `<script>`, an `<img onerror>`, an `<iframe src=javascript:>` and a `javascript:` link shows its honest text and
   runs none of them (no file written through the Jupyter API, no `window.__pwned`, no dialog); the same answer put
   back unsanitized does run there (the control).
Screenshots of each page are kept in build/test-artifacts/browser/. Chromium is installed with apt-get when it is
missing (as root); the tests skip, saying why, only when it cannot be installed. Debian's fonts-noto-cjk is installed
the same way, best effort: without a Korean font the chapters' Korean summaries show as boxes, and the first test
fails saying so.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from conftest import ROOT, _autograder
from test_lab import Lab, assert_no_news_prompt

pytestmark = pytest.mark.slow
ARTIFACTS = ROOT / "build" / "test-artifacts" / "browser"
CHAPTER = "04_masking"
RUN_TIMEOUT_MS = 240_000


def apt_install(package: str) -> subprocess.CompletedProcess:
    """apt-get install PACKAGE (as root), with an apt-get update and a second try when the first fails."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", package]
    done = subprocess.run(install, env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        subprocess.run(["apt-get", "update", "-qq"], env=env, capture_output=True, timeout=600)
        done = subprocess.run(install, env=env, capture_output=True, text=True, timeout=900)
    return done


def chromium() -> str:
    """Debian's chromium: found, or installed with apt-get (as root); skip with the reason when neither works."""
    found = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.skip("no chromium, and it cannot be installed here (needs root and apt-get): apt-get install chromium")
    done = apt_install("chromium")
    found = shutil.which("chromium")
    if not found:
        pytest.skip(f"chromium could not be installed with apt-get: {done.stderr[-500:]}")
    return found


def korean_fonts() -> list[str]:
    """The font families fontconfig has for Korean (what Chromium falls back to for Hangul)."""
    if not shutil.which("fc-list"):
        return []
    listed = subprocess.run(["fc-list", ":lang=ko", "family"], capture_output=True, text=True, timeout=60)
    return sorted({line.strip() for line in listed.stdout.splitlines() if line.strip()})


def cjk_fonts() -> None:
    """Debian's fonts-noto-cjk, best effort like chromium (as root, with apt-get): the Korean summaries need it.
    Without it the Korean check of the first test fails, naming the package."""
    if korean_fonts() or os.geteuid() != 0 or not shutil.which("apt-get"):
        return
    done = apt_install("fonts-noto-cjk")
    if done.returncode != 0:
        print(f"fonts-noto-cjk could not be installed with apt-get: {done.stderr[-500:]}", file=sys.stderr)


@pytest.fixture(scope="module")
def browser():
    executable = chromium()
    cjk_fonts()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, headless=True,
                                    args=["--headless", "--no-sandbox", "--disable-gpu"])
        try:
            yield browser
        finally:
            browser.close()


class LabOn(Lab):
    """`make lab` (or another target of the Makefile) serving `folder`, with extra environment."""

    def __init__(self, tmp: Path, target: str = "lab", extra_args: list[str] = (), env: dict | None = None,
                 make_vars: dict | None = None):
        super().__init__(tmp)
        self.target, self.extra_args, self.extra_env, self.make_vars = target, list(extra_args), env or {}, make_vars

    def command(self) -> list[str]:
        command = super().command()
        command[command.index("lab")] = self.target
        command[-1] += " " + " ".join(self.extra_args)
        return command + [f"{k}={v}" for k, v in (self.make_vars or {}).items()]

    def environment(self) -> dict[str, str]:
        env = {**super().environment(), **self.extra_env}
        env.pop("MPLBACKEND", None)  # the suite's Agg (no windows) would keep the plots out of the notebook
        return env


def shot(page, name: str) -> Path:
    """A screenshot of the page as it is, kept in build/test-artifacts/browser/NAME.png."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)
    assert path.stat().st_size > 5000, f"{path}: an empty screenshot"
    print(f"screenshot: {path}", file=sys.stderr)
    return path


# Draws each Hangul syllable of the element's text on a canvas in the element's own font (the font stack and the
# fallback the page uses) and compares the pixels: with a Korean font every syllable is a glyph of its own; without
# one each is the same missing-glyph box, the one drawn for U+0378 (unassigned: no font has it), or nothing.
KOREAN_GLYPHS_JS = """el => {
    const syllables = [...new Set(el.textContent.replace(/[^\\uAC00-\\uD7A3]/g, ''))];
    const style = getComputedStyle(el);
    const font = `${style.fontStyle} ${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
    const size = Math.ceil(parseFloat(style.fontSize) * 2);
    const canvas = document.createElement('canvas');
    canvas.width = canvas.height = size;
    const ctx = canvas.getContext('2d', {willReadFrequently: true});
    const draw = text => {
        ctx.clearRect(0, 0, size, size);
        ctx.font = font;
        ctx.textBaseline = 'top';
        ctx.fillStyle = '#000';
        ctx.fillText(text, 2, 2);
        const alpha = ctx.getImageData(0, 0, size, size).data.filter((_, i) => i % 4 === 3);
        return {ink: alpha.reduce((a, b) => a + (b > 0), 0), pixels: alpha.join(','),
                width: ctx.measureText(text).width};
    };
    const box = draw('\\u0378');
    const glyphs = syllables.map(draw);
    return {syllables: syllables.join(''), font,
            widths: glyphs.map(g => g.width), ink: glyphs.map(g => g.ink),
            distinct: new Set(glyphs.map(g => g.pixels)).size,
            boxes: glyphs.filter(g => g.pixels === box.pixels).length,
            rendered_width: el.getBoundingClientRect().width};
}"""


def korean_glyphs_problem(result: dict) -> str | None:
    """Why the measured Hangul did not render as glyphs (KOREAN_GLYPHS_JS's result), or None when it did."""
    n = len(result["syllables"])
    if n < 2:
        return f"no Korean text to check: {result}"
    if not all(w > 0 for w in result["widths"]) or not all(result["ink"]):
        return f"Hangul drawn with zero width or no ink: {result}"
    if result["boxes"] or result["distinct"] < n:
        return f"Hangul drawn as missing-glyph boxes ({result['distinct']} different glyphs for {n} syllables, " \
               f"{result['boxes']} equal to the box of U+0378): {result}"
    return None


def wait_for_notebook(page, notebook: Path) -> int:
    """Wait until the page shows every code cell of `notebook` and its kernel is idle; return the number of code cells.
    Not the first cell: on a busy machine the panel shows a placeholder cell while the notebook loads ("No Kernel |
    Initializing"), and a Run All or a save then acts on that placeholder (seen once in a fresh-clone run)."""
    code_cells = sum(1 for c in nbformat.read(notebook, as_version=4).cells if c.cell_type == "code")
    page.wait_for_function(
        """n => document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell').length === n
               && document.querySelector('.jp-Notebook-ExecutionIndicator') !== null
               && !document.title.includes('Busy')
               && /\\|\\s*Idle/.test(document.querySelector('#jp-main-statusbar')?.textContent ?? '')""",
        arg=code_cells, timeout=120_000, polling=500)
    return code_cells


def test_a_chapter_runs_in_jupyterlab_with_its_plot_widget_and_visible_tests(browser, tmp_path):
    mutation = _autograder("mutation")
    # `make lab` serves notebooks/: the answered release goes into a folder of its own there, removed afterwards
    work = ROOT / "notebooks" / f"browser-test-{os.getpid()}"
    work.mkdir()
    nbformat.write(mutation.submission(CHAPTER, None), work / f"{CHAPTER}.ipynb")  # the release, answered
    lab = LabOn(tmp_path, env={"MINIBERT_EXPORT_DIR": str(tmp_path / "export")})  # the export must not touch src/
    page = None
    try:
        lab.start()
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(f"{lab.base}/lab/tree/{work.name}/{CHAPTER}.ipynb?token={lab.token}", timeout=120_000)
        code_cells = wait_for_notebook(page, work / f"{CHAPTER}.ipynb")
        shot(page, "01-notebook-opened")
        page.click("div.lm-MenuBar-itemLabel:text-is('Run')")
        page.click("li.lm-Menu-item:has-text('Run All Cells')")
        # every code cell has an execution number ([n], not [ ] or [*]) once the run is over
        page.wait_for_function(
            """n => { const p = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')];
                       return p.length === n && p.every(e => /\\[\\d+\\]/.test(e.textContent)); }""",
            arg=code_cells, timeout=RUN_TIMEOUT_MS, polling=1000)
        # textContent, not innerText: JupyterLab skips rendering cells out of view (content-visibility)
        text = page.text_content(".jp-NotebookPanel")
        errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
        tracebacks = [e for e in errors.all_text_contents() if "Error" in e or "Traceback" in e]
        assert not tracebacks, tracebacks[0][:2000]
        for passed in ("expected counts: OK", "mask_tokens: OK"):
            assert passed in text, f"the visible test's {passed!r} is not on the page"
        images = page.locator(".jp-RenderedImage img[src^='data:image/png']")
        assert images.count() >= 1, "no plot was rendered"
        assert images.first.evaluate("img => img.naturalWidth") > 100
        sliders = page.locator(".jupyter-widgets .widget-slider, .jupyter-widgets input[type='range']")
        sliders.first.scroll_into_view_if_needed()
        assert sliders.count() >= 1 and sliders.first.is_visible(), "the chapter's widget (sliders) did not render"
        shot(page, "02-widget-rendered")
        images.first.scroll_into_view_if_needed()
        shot(page, "03-plot-rendered")
        exported = tmp_path / "export" / "masking.py"
        assert exported.exists(), "the export cell ran in the browser and wrote the module where it was told"
        # the Korean summary (핵심 정리) renders as Korean glyphs, not as boxes
        heading = page.locator(".jp-MarkdownOutput h2", has_text="핵심 정리").first
        heading.scroll_into_view_if_needed()
        problem = korean_glyphs_problem(heading.evaluate(KOREAN_GLYPHS_JS))
        shot(page, "03b-korean-summary")
        assert problem is None, (f"{problem}\nKorean fonts: {korean_fonts() or 'none'} "
                                 "(apt-get install fonts-noto-cjk)")
        assert "official Jupyter news" not in page.inner_text("body"), "JupyterLab asked about Jupyter news"
        assert_no_news_prompt(lab)
    finally:
        if page is not None:
            page.close()
        lab.stop()
        shutil.rmtree(work, ignore_errors=True)


def assert_formgrader_names_students_and_finds_the_exchange(page, lab, students: list[str]) -> None:
    """The formgrader lists students by name ("last name, first name"; make grade names them after their drop
    folder entry), never "None, None", and finds the course folder's exchange (no "exchange directory" warning)."""
    page.goto(f"{lab.base}/formgrader/manage_assignments?token={lab.token}", timeout=120_000)
    page.wait_for_selector("#main-table td", timeout=120_000)
    warning = page.locator("#warning-exchange")
    assert warning.count() == 0, warning.first.inner_text()
    page.goto(f"{lab.base}/formgrader/manage_students?token={lab.token}", timeout=120_000)
    page.wait_for_selector(f"td.name:has-text('{students[0]}')", timeout=120_000)
    names = [n.strip() for n in page.locator("td.name").all_inner_texts()]
    assert not [n for n in names if "None" in n], f"students listed without a name: {names}"
    for student in students:
        assert any(student in n for n in names), f"{student} is not listed by name: {names}"
    shot(page, "04b-formgrader-students")


def test_the_formgrader_lists_the_chapters_and_a_graded_submission(browser, graded_class, tmp_path):
    course = graded_class.course
    lab = LabOn(tmp_path, target="formgrader", make_vars={"COURSE": str(course)})
    lab.start()
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    try:
        page.goto(f"{lab.base}/formgrader?token={lab.token}", timeout=120_000)
        page.wait_for_selector("text=01_wordpiece", timeout=120_000)
        listing = page.inner_text("body")
        chapters = [p.stem for p in sorted((ROOT / "solutions").glob("[0-9][0-9]_*.ipynb"))]
        missing = [c for c in chapters if c not in listing]
        assert not missing, f"the formgrader does not list {missing}"
        shot(page, "04-formgrader-assignments")
        page.goto(f"{lab.base}/formgrader/manage_submissions/02_embeddings?token={lab.token}", timeout=120_000)
        page.wait_for_selector("text=control", timeout=120_000)
        body = page.inner_text("body")
        assert "control" in body and "graded" in body.lower(), body[:2000]
        assert "None, None" not in body, "submissions listed without the student's name"
        shot(page, "05-formgrader-submissions")
        assert_formgrader_names_students_and_finds_the_exchange(page, lab, ["control", "untouched"])
        assert_no_news_prompt(lab)
    finally:
        page.close()
        lab.stop()


# ---- the formgrader on a hostile manually graded answer --------------------------------------------------------

HOSTILE_CHAPTER, HOSTILE_ANSWER = "07_task_heads", "one-checkpoint-answer"  # a manually graded markdown answer
HONEST = "All three tasks share one pretrained checkpoint (HONEST-ANSWER-7F3A)"


def hostile_answer() -> str:
    """An answer whose HTML, if the formgrader ran it, writes pwned-<vector>.txt into the course folder through the
    Jupyter API (with the page's XSRF cookie, as the attack on the real formgrader did), sets window.__pwned and
    opens an alert."""

    def payload(name: str) -> str:
        return ("(function(n){window.__pwned=n;try{top.__pwned=n}catch(e){}"
                "var x=(document.cookie.match(/_xsrf=([^;]+)/)||[])[1]||'';"
                "fetch('/api/contents/pwned-'+n+'.txt',{method:'PUT',headers:{'X-XSRFToken':decodeURIComponent(x),"
                "'Content-Type':'application/json'},body:JSON.stringify({type:'file',format:'text',content:n})});"
                f"alert(n)}})('{name}')")

    return (f"**{HONEST}**, each with a small head on top of it.\n\n"
            f"<script>{payload('script')}</script>\n\n"
            f'A picture: <img src=x onerror="{payload("img")}">\n\n'
            f'<iframe src="javascript:{payload("iframe")}"></iframe>\n\n'
            f"[a link](javascript:{payload('link')})\n")


def course_files(course: Path) -> set[str]:
    return {str(p.relative_to(course)) for p in course.rglob("*")}


def test_the_formgrader_runs_no_script_of_a_hostile_markdown_answer(browser, tmp_path):
    grade = _autograder("grade")
    mutation = _autograder("mutation")
    submission = mutation.submission(HOSTILE_CHAPTER, None)
    cells = [c for c in submission.cells if c.metadata.get("nbgrader", {}).get("grade_id") == HOSTILE_ANSWER]
    assert len(cells) == 1 and cells[0].cell_type == "markdown"
    cells[0].source = hostile_answer()
    drop = tmp_path / "drop" / "mallory"
    drop.mkdir(parents=True)
    nbformat.write(submission, drop / f"{HOSTILE_CHAPTER}.ipynb")
    course = tmp_path / "course"
    report = grade.grade(course, tmp_path / "drop", [HOSTILE_CHAPTER], jobs=1, quiet=True)
    row = next(r for r in report.rows if r["student"] == "mallory")
    logs = "".join(p.read_text(encoding="utf-8")[-3000:] for p in course.glob("*autograde-*.log"))
    assert row["score"] != "", f"autograde failed: {row['problem']}\n{logs}"
    autograded = course / "autograded" / "mallory" / HOSTILE_CHAPTER / f"{HOSTILE_CHAPTER}.ipynb"
    stored = [c.source for c in nbformat.read(autograded, as_version=4).cells
              if c.metadata.get("nbgrader", {}).get("grade_id") == HOSTILE_ANSWER][0]
    assert HONEST in stored and not any(word in stored for word in ("<script", "<iframe", "onerror"))
    feedback = (course / "feedback" / "mallory" / HOSTILE_CHAPTER / f"{HOSTILE_CHAPTER}.html").read_text("utf-8")
    assert HONEST in feedback and not any(w in feedback for w in ("<script>(function", "<iframe", "onerror="))
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "minibert") as gb:
        submission_id = gb.find_submission_notebook(HOSTILE_CHAPTER, HOSTILE_CHAPTER, "mallory").id
        student = gb.find_student("mallory")
        assert (student.last_name, student.first_name) == ("mallory", ""), "named after the drop folder's entry"
    assert (course / "exchange").is_dir() and "c.Exchange.root" in (course / "nbgrader_config.py").read_text()

    lab = LabOn(tmp_path, target="formgrader", make_vars={"COURSE": str(course)})
    lab.start()
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    url = f"{lab.base}/formgrader/submissions/{submission_id}/?token={lab.token}"
    try:
        page.goto(f"{lab.base}/formgrader?token={lab.token}", timeout=120_000)  # logs in: the XSRF cookie is set
        page.wait_for_selector(f"text={HOSTILE_CHAPTER}", timeout=120_000)
        before = course_files(course)
        page.goto(url, timeout=120_000, wait_until="load")
        page.wait_for_selector(f"text={HONEST}", timeout=60_000)
        page.wait_for_timeout(3000)  # time for any handler and its request to run
        pwned = sorted(p for p in course_files(course) - before if "pwned" in p)
        assert not pwned, f"the answer's HTML ran in the formgrader and wrote {pwned}"
        assert not any(course.rglob("pwned*")), "a file written by the answer's HTML is in the course folder"
        flags = {frame.url: frame.evaluate("() => typeof window.__pwned") for frame in page.frames}
        assert set(flags.values()) == {"undefined"}, flags
        assert dialogs == [], dialogs
        assert page.locator("#notebook iframe, #notebook script, #notebook img[onerror]").count() == 0
        answer = page.locator(".nbgrader_cell", has_text=HONEST)
        assert answer.count() == 1 and answer.locator("strong", has_text=HONEST).count() == 1
        answer.scroll_into_view_if_needed()
        shot(page, "06-formgrader-hostile-answer-sanitized")
        assert_formgrader_names_students_and_finds_the_exchange(page, lab, ["mallory"])
        assert_no_news_prompt(lab)

        # control: the same answer unsanitized in the autograded notebook runs in this very page, so the checks above
        # would have seen it
        nb = nbformat.read(autograded, as_version=4)
        for cell in nb.cells:
            if cell.metadata.get("nbgrader", {}).get("grade_id") == HOSTILE_ANSWER:
                cell.source = hostile_answer()
        nbformat.write(nb, autograded)
        page.goto(url, timeout=120_000, wait_until="load")
        page.wait_for_selector(f"text={HONEST}", timeout=60_000)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not any(course.rglob("pwned-*.txt")):
            page.wait_for_timeout(250)
        ran = sorted(p.name for p in course.rglob("pwned-*.txt"))
        assert ran and dialogs, ("the unsanitized control did not run in the formgrader: this test could not see "
                                 f"an attack (files {ran}, dialogs {dialogs})")
    finally:
        page.close()
        lab.stop()
