"""The student's Check button in a real JupyterLab (`make lab`), clicked in headless Chromium, against a real checking
service on loopback (`autograder.check_service serve`).

One lab, one chapter (04): the button with no service configured shows the one-line explanation; configured, a
catalogued wrong answer comes back with its failing hidden test (name and "FAILED" only), the catalogue's diagnosis,
the score and the checks left; the right answer, reloaded from disk as a student's corrected notebook, comes back with
every test passed; one check more is refused with the service's reason (two per hour in this test). No text of a
hidden test or of the solution reaches the page. Screenshots of the four panels are kept in
build/test-artifacts/browser/check-*.png.
"""

from __future__ import annotations

import json
import os
import shutil
import urllib.error
import urllib.request

import nbformat
import pytest
from conftest import ROOT, _autograder
from test_browser import LabOn, browser, shot, wait_for_notebook  # noqa: F401 - browser is a fixture
from test_check_service import Service, running_service, secrets_of

from minibert_course.check import NOT_CONFIGURED

pytestmark = pytest.mark.slow
mutation = _autograder("mutation")
CHAPTER = "04_masking"
MUTANT = "counts-unchanged-equals-random"
ANSWER_TIMEOUT_MS = 300_000


@pytest.fixture(scope="module")
def service(tmp_path_factory) -> Service:
    with running_service(tmp_path_factory.mktemp("check-button"), ["erin"], "--workers", "1", "--min-interval", "0",
                         "--attempts-per-hour", "2") as s:
        yield s


def lab_post(lab, body: dict, token: str | None) -> tuple[int, dict]:
    headers = {"Content-Type": "application/json", **({"Authorization": f"token {token}"} if token else {})}
    request = urllib.request.Request(f"{lab.base}/minibert-check/check", data=json.dumps(body).encode(),
                                     method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, {}


def click_check(page, state: str, shown: int) -> str:
    """Click the notebook toolbar's Check button; wait until the panel shows its answer number `shown` (the panel
    counts the answers it has shown) in state `state`; return the panel's text."""
    page.click(".jp-NotebookPanel-toolbar .minibert-CheckButton")
    page.wait_for_function(
        """([state, n]) => { const p = document.getElementById('minibert-check-panel');
                             return p !== null && p.dataset.state === state && Number(p.dataset.shown) === n; }""",
        arg=[state, shown], timeout=ANSWER_TIMEOUT_MS, polling=500)
    return page.text_content("#minibert-check-panel")


def test_the_check_button_answers_wrong_then_right(browser, service, tmp_path):  # noqa: F811 - the fixture
    mutant = next(m for m in mutation.load_catalogue(CHAPTER) if m.name == MUTANT)
    work = ROOT / "notebooks" / f"check-button-test-{os.getpid()}"  # `make lab` serves notebooks/
    work.mkdir()
    notebook = work / f"{CHAPTER}.ipynb"
    nbformat.write(mutation.submission(CHAPTER, mutant), notebook)  # the release, answered with a known mistake
    config = tmp_path / "course-check.json"  # absent at first: the lab has no service configured
    lab = LabOn(tmp_path, env={"MINIBERT_CHECK_CONFIG": str(config), "MINIBERT_CHECK_URL": "",
                               "MINIBERT_CHECK_TOKEN": ""})
    page = None
    try:
        lab.start()
        started = lab.log.read_text(encoding="utf-8", errors="replace")  # make lab's one line, before Jupyter's log
        assert "checking service: No checking service is configured" in started, lab.log_tail()
        # the lab's check route: only with the lab's own login, and only for a notebook in the lab's folder
        assert lab_post(lab, {"path": f"{work.name}/{CHAPTER}.ipynb"}, token=None)[0] == 403
        status, reply = lab_post(lab, {"path": "../pyproject.toml"}, token=lab.token)
        assert status == 200 and reply["status"] == "refused" and "notebook" in reply["error"], reply
        page = browser.new_page(viewport={"width": 1500, "height": 950})
        page.goto(f"{lab.base}/lab/tree/{work.name}/{CHAPTER}.ipynb?token={lab.token}", timeout=120_000)
        wait_for_notebook(page, work / f"{CHAPTER}.ipynb")
        page.wait_for_selector(".jp-NotebookPanel-toolbar .minibert-CheckButton", timeout=60_000)

        text = click_check(page, "not-configured", 1)
        assert text.strip() == NOT_CONFIGURED
        shot(page, "check-01-not-configured")

        config.write_text(json.dumps({"url": service.url, "token": service.tokens["erin"]}), encoding="utf-8")
        text = click_check(page, "done", 2)
        shot(page, "check-02-wrong-answer")
        failed = page.locator("#minibert-check-panel .minibert-mod-failed .minibert-CheckPanel-name")
        assert [t.split(" (")[0].strip() for t in failed.all_text_contents()] == ["test-counts"], text
        assert "hidden" in failed.first.text_content()
        assert page.text_content("#minibert-check-panel .minibert-mod-failed pre") == "a hidden test failed"
        assert mutant.why in page.locator("#minibert-check-panel .minibert-CheckPanel-diagnosis li").all_text_contents()
        summary = page.text_content(".minibert-CheckPanel-summary")
        assert "checks left this hour: 1" in summary and not summary.startswith("score 0 "), summary
        leaked = [line for line in secrets_of(CHAPTER) if line in page.content()]
        assert not leaked, f"hidden test or solution text on the page: {leaked[:3]}"

        # the student corrects the notebook (here: the right answer written to disk), reloads it and checks again
        nbformat.write(mutation.submission(CHAPTER, None), notebook)
        page.click("div.lm-MenuBar-itemLabel:text-is('File')")
        page.click("li.lm-Menu-item:has-text('Reload Notebook from Disk')")
        right_line = next(line for old, _ in mutant.edits for line in old.splitlines() if line.strip())
        page.wait_for_function("line => document.querySelector('.jp-NotebookPanel').textContent.includes(line)",
                               arg=right_line.strip(), timeout=60_000)
        text = click_check(page, "done", 3)
        shot(page, "check-03-right-answer")
        assert page.locator("#minibert-check-panel .minibert-mod-failed").count() == 0, text
        assert page.locator("#minibert-check-panel .minibert-mod-passed").count() >= 2, text
        summary = page.text_content(".minibert-CheckPanel-summary")
        score, best = summary.removeprefix("score ").split(";")[0].split(" / ")
        assert float(score) == float(best) > 0 and "checks left this hour: 0" in summary, summary
        # one more: the service refuses it (the hourly limit), and the panel says so, counting nothing
        text = click_check(page, "refused", 4)
        shot(page, "check-04-refused")
        assert "2 checks of 04_masking in the last hour (at most 2)" in text, text
    finally:
        if page is not None:
            page.close()
        lab.stop()
        shutil.rmtree(work, ignore_errors=True)
    # both checks are the service's attempts of this student, the second one the notebook the lab saved
    status, mine = service.call("erin", "GET", "/api/attempts")
    assert status == 200 and [a["score"] < a["max_score"] for a in mine["attempts"]] == [True, False], mine
    stored = sorted((service.course / "check-service" / "submissions" / "erin" / CHAPTER).glob("*.ipynb"))
    assert len(stored) == 2
    sources = ["\n".join(c.source for c in nbformat.read(f, as_version=4).cells) for f in stored]
    wrong_line = next(line.strip() for _, new in mutant.edits for line in new.splitlines() if line.strip())
    assert right_line.strip() not in sources[0] and wrong_line in sources[0]  # what the lab saved, each time
    assert right_line.strip() in sources[1]
