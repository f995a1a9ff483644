"""The lecture the course teaches, item by item: where each item is taught and how far it is graded.

The lecture (two Korean sources: lecture notes on BERT, and a concept post) has numbered parts: the concept post's
sections 1-8, the lecture's four check questions, five common misconceptions and a five-question self-check list;
besides them it states figures and claims (sizes, the problem setting, the code-formula links, ...). `ITEMS` gives
each one a home: the solution-notebook cells that teach it, and the graded cells that check it (autograded test
cells, or manually graded answers with a mark scheme), with how far they check it:

- "graded": the graded cells fail a wrong answer about every part of the item;
- "partly": they grade only what the item's note says; the note names what is not graded and where it is taught;
- "not graded": no graded cell fails a wrong answer about it; the note says where it is taught or self-checked.

A cell is named under `graded` only if its test (visible and hidden part) or its mark scheme fails a wrong answer
about the item. `tests/course/test_lecture.py` fails when an item has no home, when a cell it names is gone or is not a
graded cell with points, or when its grading and its note disagree; `python -m minibert_course.lecture` writes
docs/lecture_coverage.md. The questions are quoted in the lecture's words (Korean) so that each can be found in the
source.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

from minibert_course.chapters import chapters

ROOT = Path(__file__).resolve().parents[2]

GRADINGS = {"graded": "yes", "partly": "partly", "not graded": "no"}  # Item.grading -> the table's "graded" column


@dataclass(frozen=True)
class Item:
    key: str
    kind: str  # "section" | "check question" | "misconception" | "self-check" | "figure" | "claim" | "code link"
    source: str  # the lecture's words
    english: str
    taught: tuple[str, ...]  # "chapter/cell-id" of the cells that explain it
    graded: tuple[str, ...]  # "chapter/grade-id" of the graded cells that fail a wrong answer about it
    grading: str = "graded"  # one of GRADINGS
    note: str = ""  # what the graded cells check and what they do not (required unless grading == "graded")


def _i(key, kind, source, english, taught, graded, grading="graded", note="") -> Item:
    return Item(key, kind, source, english, tuple(taught.split()), tuple(graded.split()), grading, note)


ITEMS: tuple[Item, ...] = (
    # ---- the concept post's numbered sections ----
    _i(
        "section-1",
        "section",
        "1. BERT 구조",
        "BERT is a stack of Transformer encoder layers (self-attention, then a feed-forward network) giving "
        "contextual representations H = Encoder(X)",
        "03/ch03-01 03/ch03-15 03/ch03-21 10/ch10-limits",
        "03/test-mha 03/test-layer 10/test-statements-embeddings",
        "partly",
        "the layer, not the stack: test-mha (multi-head self-attention) and test-layer (the self-attention block, then "
        "the feed-forward block, each with its residual add and LayerNorm) grade one encoder layer; "
        "test-statements-embeddings (s5, s6) grades that the outputs are contextual. Stacking the embeddings and L "
        "layers into BertModel (ch03-23) is given code, and no graded cell asks for it.",
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
        "04/ch04-01 04/ch04-03 06/ch06-07",
        "04/test-mask-tokens 06/test-loss 10/test-quiz-notation 10/selfcheck-mlm-objective 03/test-pattern",
        "graded",
        "about 15% of the pieces: test-mask-tokens; the objective over M given x-tilde: test-loss, "
        "test-quiz-notation, selfcheck-mlm-objective; from both sides: test-pattern (every position reads every "
        "position).",
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
        "05/test-nsp 05/test-pairs 06/test-nsp-head 10/test-quiz-nsp 10/selfcheck-nsp-purpose "
        "10/test-statements-variants",
    ),
    _i("section-6", "section", "6. BERT Pretraining Loss", "L = L_MLM + L_NSP", "06/ch06-07", "06/test-loss"),
    _i(
        "section-7",
        "section",
        "7. BERT 특징",
        "bidirectional, Transformer encoder (self-attention based), MLM pretraining (masked-word prediction)",
        "03/ch03-11 03/ch03-15 03/ch03-21 04/ch04-01 04/ch04-03",
        "03/test-pattern 10/selfcheck-bidirectional 03/test-mha 03/test-layer 10/test-statements-generation "
        "04/test-mask-tokens 06/test-loss 10/test-compare-format",
        "graded",
        "feature by feature. Bidirectional: test-pattern, selfcheck-bidirectional. Transformer encoder: test-mha and "
        "test-layer (self-attention and the encoder layer), test-statements-generation (s2: BERT is an encoder whose "
        "positions read the whole input). MLM pretraining: test-mask-tokens and test-loss (targets, labels and the "
        "loss over them), test-compare-format (hidden: BERT's objective is MLM + NSP, not next-token prediction).",
    ),
    _i(
        "section-8",
        "section",
        "8. BERT 한계",
        "pretrain/fine-tune mismatch, unsuited to generation, low MLM efficiency: what RoBERTa and ELECTRA changed",
        "10/ch10-limits 10/ch10-electra",
        "10/test-quiz-why-mask 10/test-statements-mask 10/test-statements-generation 10/selfcheck-generation "
        "10/test-compare-electra 10/test-statements-variants 10/test-compare-roberta 10/why-answer",
        "graded",
        "limit by limit. The [MASK] mismatch: test-quiz-why-mask, test-statements-mask (s3, s4). Generation: "
        "test-statements-generation (s1), selfcheck-generation. MLM's low efficiency: test-compare-electra (ELECTRA's "
        "loss at every position), test-statements-variants (s10). What RoBERTa and ELECTRA changed: "
        "test-compare-roberta, test-compare-electra, why-answer.",
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
        "04/test-mask-tokens 06/test-loss 10/test-quiz-notation 10/selfcheck-mlm-objective",
        "partly",
        "the mechanism and the definition of M, not the reason. test-mask-tokens fails unless unchanged (and random) "
        "targets keep their label; test-loss (hidden) fails unless L_MLM averages over every target, unchanged ones "
        "included, not over the [MASK] positions only; test-quiz-notation (hidden) fails unless M is every position "
        "selected as a target, whatever its input shows; selfcheck-mlm-objective's mark scheme gives 0 for a loss at "
        "the [MASK] positions only. Why scoring an unchanged target matters (it makes the model represent the pieces "
        "it can see) is taught in ch04-03 and ch06-11 and is check question 2 of ch04-25 (a self-check, answer "
        "shown); no graded cell asks it.",
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
        "10/ch10-limits 03/ch03-01",
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
    # ---- the lecture's figures, claims and code links outside its numbered parts ----
    _i(
        "claim-problem-setting",
        "claim",
        "P (w_{t} | w_{1}, . . ., w_{t - 1})",
        "the problem setting: earlier language models read one way, P(w_t | w_1, ..., w_{t-1}) (the next word from "
        "the previous ones); understanding needs both sides, hence BERT's bidirectional encoder",
        "03/ch03-11 04/ch04-01",
        "03/test-pattern 10/test-compare-format 10/selfcheck-generation",
        "partly",
        "the contrast, not the formula. test-pattern grades the causal pattern (position i reads j <= i) against "
        "BERT's; test-compare-format (hidden) fails a BERT objective of 'next-token prediction, left to right'; "
        "selfcheck-generation's mark scheme asks that BERT has no model of the next piece given the previous ones. "
        "The chapters say it in words only (ch03-11: a decoder predicts the next token from the positions before it; "
        "ch04-01: BERT cannot be trained to predict the next word): no chapter writes P(w_t | w_1, ..., w_{t-1}) or "
        "says that language models before BERT were left to right.",
    ),
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
        "03/ch03-27 03/ch03-32 09/ch09-01",
        "03/test-params",
        "partly",
        "the parameter counts, as computed: test-params fails unless count_parameters gives the exact closed-form "
        "count (~110M for Base, ~340M for Large) for sizes that the test writes out itself. The sizes (12/24 layers, "
        "768/1024 hidden, 12/16 heads) are never asked: they are given in BertConfig.base() / large() (ch03-04) and "
        "written out by the tests (03 test-params; 09 test-flops, whose ch09-05 lists them 'for the tests'); "
        "ch03-32's summary states them.",
    ),
    _i(
        "fact-vocab",
        "figure",
        "약 30K WordPiece",
        "a WordPiece vocabulary of about 30K pieces (30,522 in bert-base-uncased)",
        "01/ch01-03 01/ch01-31 10/ch10-roberta",
        "",
        "not graded",
        "no graded cell asks the vocabulary's size: the tests use bert-base-uncased's vocab.txt and BertConfig's "
        "vocab_size=30522 as given data (01 test-wordpiece-unhappiness, 03 test-params), and the vocabulary the "
        "exercise trains is far smaller (test-train-vocab asks for 4,000). Taught in ch01-03 (about 30,000 "
        "entries), ch01-31 (30,522 against 4,000) and ch10-roberta (30K WordPiece against RoBERTa's 50K "
        "byte-level BPE).",
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
        "claim-word-labels",
        "claim",
        "WordPiece로 한 단어가 나뉜 경우 원래 word labels와 pieces의 대응도 맞추어야 한다",
        "token classification moves word labels onto WordPiece pieces: the word's label at its first piece, -100 at "
        "its other pieces (or the label at every piece) and at [CLS] / [SEP]",
        "07/ch07-07 08/ch08-13 08/ch08-word-tags",
        "07/test-align 08/test-word-tags",
    ),
    _i(
        "claim-start-end-vectors",
        "claim",
        "State 에 start/end vectors를 적용",
        "extractive QA applies a start vector S and an end vector E to every state T_i: start score S·T_i, end score "
        "E·T_i, a softmax over the positions; the span with the best start + end score is the answer",
        "07/ch07-11 07/ch07-se-vectors 07/ch07-14",
        "07/test-qa 07/test-span",
        "graded",
        "test-qa fails unless start_logits and end_logits are channels 0 and 1 of qa_outputs (S·T_i + b and E·T_i + "
        "b at every position) and the loss is the cross-entropy over the positions; test-span fails unless a span "
        "scores start_logits[i] + end_logits[j] and the best valid span wins. That S and E are the two rows of "
        "qa_outputs' weight is shown by ch07-se-vectors, not asked.",
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
    _i(
        "code-bertmodel",
        "code link",
        "BERT 모델 `transformers.BertModel` BERT encoder",
        "the BERT encoder in code is `transformers.BertModel`; the course's BertModel has its keys and outputs",
        "03/ch03-21 03/ch03-25",
        "02/test-embeddings 03/test-mha 03/test-layer",
        "partly",
        "the parts of the course's BertModel that a student writes, each against a formula that is Hugging Face's: "
        "the embeddings (test-embeddings), multi-head self-attention (test-mha), the post-LN encoder layer with the "
        "exact GELU (test-layer). No graded cell compares the model with transformers.BertModel or asks what that "
        "class is: ch03-26 makes the comparison on real weights as a demo that is skipped while grading "
        "(tests/test_model.py makes it for the reference package).",
    ),
    _i(
        "code-bertformaskedlm",
        "code link",
        "MLM `BertForMaskedLM` mask prediction",
        "MLM in code is `BertForMaskedLM`: the encoder and the head that predicts the masked pieces",
        "06/ch06-04 06/ch06-10 10/ch10-roberta",
        "06/test-lm-head",
        "partly",
        "the MLM head that BertForMaskedLM puts on the encoder: test-lm-head (logits = LayerNorm(GELU(dense(h))) "
        "E^T + b, with the decoder tied to the word embeddings). BertForMaskedLM itself and its loss are given code "
        "(ch06-10), and no graded cell compares it with transformers.BertForMaskedLM (tests/test_heads.py does, for "
        "the reference package).",
    ),
    _i(
        "code-berttokenizer",
        "code link",
        "tokenize `BertTokenizer` WordPiece tokenizer",
        "tokenization in code is `BertTokenizer`, a WordPiece tokenizer",
        "01/ch01-11 01/ch01-20",
        "01/test-matches-tokenizers 01/test-wordpiece-reference",
        "partly",
        "test-matches-tokenizers fails unless the course's BertTokenizer (given code around the student's WordPiece "
        "tokenize_word) gives the pieces and ids of Hugging Face `tokenizers` with bert-base-uncased's "
        "tokenizer.json, on Wikipedia paragraphs and hard cases; test-wordpiece-reference grades the WordPiece "
        "algorithm. The reference is `tokenizers` (the library behind transformers' BertTokenizerFast), not "
        "transformers.BertTokenizer, and no graded cell asks what that class is.",
    ),
)

CHAPTERS = {c.number: c.stem for c in chapters()}


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


def _points(cell: dict) -> float:
    points = cell.get("metadata", {}).get("nbgrader", {}).get("points")
    return points if isinstance(points, (int, float)) and not isinstance(points, bool) else 0


def problems() -> list[str]:
    """What is wrong with ITEMS against the notebooks: a missing cell, a graded home that is not a graded cell with
    points, a test named as teaching, a grading that its graded cells or its note contradict."""
    out = []
    for item in ITEMS:
        if item.grading not in GRADINGS:
            out.append(f"{item.key}: grading {item.grading!r} is not one of {sorted(GRADINGS)}")
        if not item.taught:
            out.append(f"{item.key}: no taught home")
        if item.grading in ("graded", "partly") and not item.graded:
            out.append(f"{item.key}: no graded home (or say 'not graded', and where it is taught, in its note)")
        if item.grading == "not graded" and item.graded:
            out.append(f"{item.key}: 'not graded' but it names graded cells {list(item.graded)}")
        if item.grading in ("partly", "not graded") and not item.note.strip():
            out.append(f"{item.key}: {item.grading!r} needs a note: what is graded, what is not, where it is taught")
        for ref in item.taught + item.graded:
            chapter, cid = ref.split("/")
            if chapter not in CHAPTERS or cid not in cells(chapter):
                out.append(f"{item.key}: {ref} is not a cell of solutions/")
        for ref in item.taught:
            chapter, cid = ref.split("/")
            if chapter in CHAPTERS and cid in cells(chapter):
                if how_graded(cells(chapter)[cid]) != "not a graded cell":
                    out.append(f"{item.key}: {ref} is a graded cell, not one that teaches: name it under graded")
        for ref in item.graded:
            chapter, cid = ref.split("/")
            if chapter in CHAPTERS and cid in cells(chapter):
                cell = cells(chapter)[cid]
                how = how_graded(cell)
                if not how.startswith(("auto", "manual")) or "NO MARK SCHEME" in how:
                    out.append(f"{item.key}: {ref} is {how}")
                elif _points(cell) <= 0:
                    out.append(f"{item.key}: {ref} is a graded cell without points")
    return out


def _cell(text: str) -> str:
    """Text for a cell of a Markdown table: a `|` of the text (as in P(w_t | ...)) must not end the cell."""
    return text.replace("|", "\\|")


def table() -> str:
    lines = [
        "# The lecture, item by item",
        "",
        "Generated by `python -m minibert_course.lecture` from `src/minibert_course/lecture.py`; "
        "`tests/course/test_lecture.py` checks that every item has a home and that this file is current. Chapters are "
        "the solution notebooks (`solutions/NN_*.ipynb`); a cell is named by its id or nbgrader grade id. "
        "*auto*: an autograded test cell (visible and hidden tests); *manual*: an answer a grader marks with the "
        "mark scheme in the cell's metadata (`make grade` writes them to `mark_schemes.md`).",
        "",
        "A cell is listed under *graded by* only if its test (visible and hidden part) or its mark scheme fails a "
        "wrong answer about the item. *graded*: **yes**, the listed cells grade every part of the item; **partly**, "
        "they grade only what the note after them says, and the note says what is not graded and where it is "
        "taught; **no**, no graded cell grades it, and the note says where it is taught or self-checked.",
        "",
        "| # | kind | the lecture | in English | taught in | graded | graded by |",
        "|---|---|---|---|---|---|---|",
    ]
    for item in ITEMS:
        taught = ", ".join(f"{r.split('/')[0]} `{r.split('/')[1]}`" for r in item.taught)
        graded = ", ".join(
            f"{ch} `{cid}` ({how_graded(cells(ch)[cid])})" for ch, cid in (r.split("/") for r in item.graded)
        )
        if item.note:
            label = {"graded": "What each checks", "partly": "Partly", "not graded": "Not graded"}[item.grading]
            graded = f"{graded}. *{label}:* {item.note}" if graded else f"*{label}:* {item.note}"
        row = (item.key, item.kind, item.source, item.english, taught, GRADINGS.get(item.grading, item.grading), graded)
        lines.append("| " + " | ".join(_cell(text) for text in row) + " |")
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
