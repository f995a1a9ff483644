"""The lecture the course teaches, item by item: where each item is taught and how it is graded.

The lecture (two Korean sources: lecture notes on BERT, and a concept post) has numbered parts: the concept post's
sections 1-8, the lecture's four check questions, five common misconceptions and a five-question self-check list.
`ITEMS` gives each one a home: the solution-notebook cells that teach it, and the graded cells that check it
(autograded test cells, or manually graded answers with a mark scheme). `tests/test_lecture.py` fails when an item
has no home, or when a cell it names is gone; `python -m minibert_course.lecture` writes docs/lecture_coverage.md.
The questions are quoted in the lecture's words (Korean) so that each can be found in the source.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Item:
    key: str
    kind: str  # "section" | "check question" | "misconception" | "self-check"
    source: str  # the lecture's words
    english: str
    taught: tuple[str, ...]  # "chapter/cell-id" of the cells that explain it
    graded: tuple[str, ...]  # "chapter/grade-id" of the graded cells that check it


def _i(key, kind, source, english, taught, graded) -> Item:
    return Item(key, kind, source, english, tuple(taught.split()), tuple(graded.split()))


ITEMS: tuple[Item, ...] = (
    # ---- the concept post's numbered sections ----
    _i(
        "section-1",
        "section",
        "1. BERT 구조",
        "BERT is a stack of Transformer encoder layers giving contextual representations H = Encoder(X)",
        "03/ch03-21 03/ch03-11 10/ch10-limits",
        "03/test-layer 03/test-mha 03/test-params 10/test-statements-embeddings",
    ),
    _i(
        "section-2",
        "section",
        "2. BERT 입력 구성",
        "input = token + segment + position embeddings; [CLS] A [SEP] B [SEP]",
        "02/ch02-03 01/ch01-17",
        "02/test-embeddings 01/test-input-format 10/selfcheck-input-embeddings",
    ),
    _i(
        "section-3",
        "section",
        "3. Masked Language Model (MLM)",
        "predict the hidden pieces from both sides; about 15% of the pieces; the objective over the target set M "
        "given the corrupted input x-tilde",
        "04/ch04-03 06/ch06-07",
        "04/test-mask-tokens 06/test-loss 10/test-quiz-notation 10/selfcheck-mlm-objective",
    ),
    _i(
        "section-4",
        "section",
        "4. MLM Mask 전략",
        "of the targets 80% [MASK] / 10% random / 10% unchanged, so the model does not rely on [MASK] alone",
        "04/ch04-03 04/ch04-15",
        "04/test-corrupt 04/test-counts 10/test-quiz-why-mask",
    ),
    _i(
        "section-5",
        "section",
        "5. Next Sentence Prediction (NSP)",
        "IsNext / NotNext from [CLS] A [SEP] B [SEP], to learn relations between sentences; RoBERTa removed it",
        "05/ch05-10 06/ch06-nsp-head-text 10/ch10-roberta",
        "05/test-nsp 05/test-pairs 06/test-nsp-head 10/test-quiz-nsp 10/selfcheck-nsp-purpose",
    ),
    _i("section-6", "section", "6. BERT Pretraining Loss", "L = L_MLM + L_NSP", "06/ch06-07", "06/test-loss"),
    _i(
        "section-7",
        "section",
        "7. BERT 특징",
        "bidirectional, Transformer encoder, MLM pretraining",
        "03/ch03-11 03/ch03-21 04/ch04-03",
        "03/test-pattern 10/selfcheck-bidirectional",
    ),
    _i(
        "section-8",
        "section",
        "8. BERT 한계",
        "pretrain/fine-tune mismatch, unsuited to generation, low MLM efficiency: what RoBERTa and ELECTRA changed",
        "10/ch10-limits 10/ch10-electra",
        "10/test-quiz-why-mask 10/test-statements-generation 10/why-answer 10/test-compare-electra",
    ),
    # ---- the lecture's check questions ----
    _i(
        "check-1",
        "check question",
        "100 input tokens에서 MASK/random/unchanged의 기댓수와 loss 대상 수는?",
        "for 100 input pieces: expected [MASK] / random / unchanged counts, and how many positions the loss scores "
        "(15 targets: 12 / 1.5 / 1.5; the loss at all 15)",
        "04/ch04-03 04/ch04-15",
        "04/test-counts 04/test-fixed-count 04/test-mask-tokens",
    ),
    _i(
        "check-2",
        "check question",
        "[CLS] classification, token classification, Extractive QA의 output 차이는?",
        "outputs of [CLS] classification (B, num_labels), token classification (B, T, num_labels) and extractive QA "
        "(start and end logits (B, T))",
        "07/ch07-05 07/ch07-06 07/ch07-11 07/ch07-14",
        "07/test-seq-cls 07/test-token-cls 07/test-qa 07/test-span",
    ),
    _i(
        "check-3",
        "check question",
        "Unchanged token도 MLM loss target으로 남겨야 하는 이유는?",
        "why an unchanged target stays in the loss (target selection and corruption are separate; scoring only "
        "[MASK] is another objective)",
        "04/ch04-03 06/ch06-11 06/ch06-07",
        "04/test-mask-tokens 06/test-loss 10/test-quiz-notation",
    ),
    _i(
        "check-4",
        "check question",
        "BERT · RoBERTa · ELECTRA를 축별로 비교하고 그 차이가 필요한 이유를 설명하세요.",
        "BERT / RoBERTa / ELECTRA by objective, loss positions, main change and later use, and why the differences "
        "were needed",
        "10/ch10-roberta 10/ch10-electra 10/ch10-compare",
        "10/test-compare-format 10/test-compare-roberta 10/test-compare-electra 10/why-answer",
    ),
    # ---- the five common misconceptions ----
    _i(
        "misconception-1",
        "misconception",
        "BERT는 문장을 생성할 수 있다고 생각한다",
        "'BERT can generate text': it fills blanks and encodes; it has no left-to-right order to generate in",
        "03/ch03-11 10/ch10-limits",
        "10/test-statements-generation 10/selfcheck-generation",
    ),
    _i(
        "misconception-2",
        "misconception",
        "BERT는 GPT와 같은 구조라고 생각한다",
        "'BERT has GPT's architecture': an encoder with full attention vs a decoder with causal attention",
        "03/ch03-11",
        "03/test-pattern 10/test-statements-generation",
    ),
    _i(
        "misconception-3",
        "misconception",
        "[MASK] 토큰이 실제 입력에서도 사용된다고 생각한다",
        "'[MASK] appears in real inputs': only in pretraining inputs, never at fine-tuning or test time",
        "04/ch04-03 10/ch10-limits",
        "10/test-statements-mask 10/test-quiz-why-mask",
    ),
    _i(
        "misconception-4",
        "misconception",
        "BERT는 단어 임베딩만 학습한다고 생각한다",
        "'BERT learns only word embeddings': every layer is learned, and its outputs are contextual",
        "10/ch10-limits 02/ch02-03 03/ch03-21",
        "10/test-statements-embeddings",
    ),
    _i(
        "misconception-5",
        "misconception",
        "NSP가 모든 BERT 계열 모델에서 사용된다고 생각한다",
        "'every BERT-family model uses NSP': RoBERTa dropped it, ELECTRA replaced the objective",
        "10/ch10-roberta 05/ch05-10",
        "10/test-statements-variants 10/test-compare-roberta",
    ),
    # ---- the self-check list ----
    _i(
        "self-check-1",
        "self-check",
        "BERT가 bidirectional이라고 하는 이유는 무엇인가?",
        "why BERT is called bidirectional",
        "03/ch03-11",
        "03/test-pattern 10/selfcheck-bidirectional",
    ),
    _i(
        "self-check-2",
        "self-check",
        "BERT의 MLM pretraining 목표는 무엇인가?",
        "BERT's MLM pretraining objective",
        "04/ch04-03 06/ch06-07",
        "06/test-loss 04/test-mask-tokens 10/selfcheck-mlm-objective",
    ),
    _i(
        "self-check-3",
        "self-check",
        "BERT 입력 구조는 어떤 embedding으로 구성되는가?",
        "which embeddings make up BERT's input",
        "02/ch02-03",
        "02/test-embeddings 10/selfcheck-input-embeddings",
    ),
    _i(
        "self-check-4",
        "self-check",
        "NSP task의 목적은 무엇인가?",
        "the purpose of NSP",
        "05/ch05-10",
        "10/test-quiz-nsp 10/selfcheck-nsp-purpose",
    ),
    _i(
        "self-check-5",
        "self-check",
        "BERT가 generation task에 부적합한 이유는 무엇인가?",
        "why BERT is ill-suited to generation",
        "10/ch10-limits 03/ch03-11",
        "10/selfcheck-generation 10/test-statements-generation",
    ),
    # ---- the lecture's figures and claims that the issue found without a home ----
    _i(
        "fact-results",
        "figure",
        "BERT-Large GLUE test 80.5(+7.7), SQuAD 1.1 dev F1 90.9",
        "the reported results: GLUE test 80.5 (+7.7), SQuAD v1.1 dev F1 90.9",
        "08/ch08-22",
        "10/test-quiz-results",
    ),
    _i(
        "fact-modernbert",
        "figure",
        "ModernBERT의 30%",
        "ModernBERT masks 30%: 15% is not a requirement",
        "10/ch10-rates",
        "10/test-quiz-rate 10/test-statements-variants",
    ),
    _i(
        "fact-sizes",
        "figure",
        "BERT Base/Large는 layers 12/24, hidden size 768/1024, heads 12/16, parameters 110M/340M",
        "Base / Large sizes and parameter counts",
        "03/ch03-03 03/ch03-27",
        "03/test-params",
    ),
    _i(
        "fact-position-3",
        "figure",
        "the / cat / sat / on / the / mat에서 position 3",
        "position 3 reads all six positions in BERT, j <= 3 in a causal decoder",
        "03/ch03-11",
        "03/test-pattern",
    ),
    _i(
        "fact-unhappiness",
        "figure",
        "unhappiness는 un / ##happiness",
        "WordPiece '##' and un ##happiness",
        "01/ch01-06 01/ch01-09",
        "01/test-wordpiece-unhappiness 01/test-wordpiece-reference",
    ),
    _i(
        "fact-512",
        "figure",
        "512 input 한도는 WordPiece positions 기준",
        "the 512-position limit and windowing",
        "01/ch01-22",
        "01/test-windows",
    ),
    _i(
        "fact-google",
        "figure",
        "BERT was released by Google in 2018",
        "extractive QA picks the span `Google`",
        "07/ch07-14",
        "07/test-span",
    ),
    _i(
        "fact-one-checkpoint",
        "figure",
        "One checkpoint, many tasks",
        "one checkpoint copied per task and fine-tuned whole (2-4 epochs), not one model serving all tasks",
        "07/ch07-17 08/ch08-22",
        "07/one-checkpoint-answer",
    ),
)

CHAPTERS = {p.stem[:2]: p.stem for p in sorted((ROOT / "solutions").glob("[0-9][0-9]_*.ipynb"))}


def cells(chapter: str) -> dict[str, dict]:
    """cell id -> cell of a solution notebook (nbgrader cells also under their grade_id)."""
    nb = json.loads((ROOT / "solutions" / f"{CHAPTERS[chapter]}.ipynb").read_text(encoding="utf-8"))
    found = {}
    for cell in nb["cells"]:
        found[cell.get("id")] = cell
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if grade_id:
            found[grade_id] = cell
    return found


def how_graded(cell: dict) -> str:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    if meta.get("grade") and cell.get("cell_type") == "markdown":
        return (
            f"manual, {meta.get('points', 0):g} pt, mark scheme"
            if cell.get("metadata", {}).get("minibert", {}).get("mark_scheme")
            else f"manual, {meta.get('points', 0):g} pt, NO MARK SCHEME"
        )
    if meta.get("grade") and meta.get("locked"):
        return f"auto, {meta.get('points', 0):g} pt"
    return "not a graded cell"


def problems() -> list[str]:
    """What is wrong with ITEMS against the notebooks: a missing cell, a graded home that is not graded."""
    out = []
    for item in ITEMS:
        if not item.taught or not item.graded:
            out.append(f"{item.key}: no {'taught' if not item.taught else 'graded'} home")
        for ref in item.taught + item.graded:
            chapter, cid = ref.split("/")
            if chapter not in CHAPTERS or cid not in cells(chapter):
                out.append(f"{item.key}: {ref} is not a cell of solutions/")
        for ref in item.graded:
            chapter, cid = ref.split("/")
            if chapter in CHAPTERS and cid in cells(chapter):
                how = how_graded(cells(chapter)[cid])
                if not how.startswith(("auto", "manual")) or "NO MARK SCHEME" in how:
                    out.append(f"{item.key}: {ref} is {how}")
    return out


def table() -> str:
    lines = [
        "# The lecture, item by item",
        "",
        "Generated by `python -m minibert_course.lecture` from `src/minibert_course/lecture.py`; "
        "`tests/test_lecture.py` checks that every item has a home and that this file is current. Chapters are "
        "the solution notebooks (`solutions/NN_*.ipynb`); a cell is named by its id or nbgrader grade id. "
        "*auto*: an autograded test cell (visible and hidden tests); *manual*: an answer a grader marks with the "
        "mark scheme in the cell's metadata (`make grade` writes them to `mark_schemes.md`).",
        "",
        "| # | kind | the lecture | in English | taught in | graded by |",
        "|---|---|---|---|---|---|",
    ]
    for item in ITEMS:
        taught = ", ".join(f"{r.split('/')[0]} `{r.split('/')[1]}`" for r in item.taught)
        graded = ", ".join(
            f"{ch} `{cid}` ({how_graded(cells(ch)[cid])})" for ch, cid in (r.split("/") for r in item.graded)
        )
        lines.append(f"| {item.key} | {item.kind} | {item.source} | {item.english} | {taught} | {graded} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minibert_course.lecture", description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "lecture_coverage.md"))
    args = parser.parse_args(argv)
    wrong = problems()
    if wrong:
        raise SystemExit("lecture items without a home:\n" + "\n".join(wrong))
    Path(args.out).write_text(table(), encoding="utf-8")
    print(f"wrote {args.out} ({len(ITEMS)} items)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
