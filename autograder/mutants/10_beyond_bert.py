"""Wrong implementations and wrong answers of chapter 10: each must lose points under the real nbgrader autograde."""

_BUDGET = "budget = max_seq_length - 2"
_JOINT = "joint = [sep_id] if current and starts_document else []"
_FLUSH = """                if len(current) + len(joint) + len(piece) > budget:
                    rows.append([cls_id, *current, sep_id])
                    current, joint = [], []
                current += joint + piece"""
_LAST = """    if current:
        rows.append([cls_id, *current, sep_id])
    return rows"""
_SAMPLE = "samples = torch.multinomial(probs, 1, generator=generator).squeeze(-1)"
_PROBS = "probs = generator_logits.detach().float().softmax(-1)"
_RETURN_REPLACED = "return corrupted, (corrupted != input_ids).float()"
_REAL = "real = attention_mask.bool()"
_BCE = "rtd = F.binary_cross_entropy_with_logits(discriminator_logits[real].float(), is_replaced[real].float())"
_TOTAL = "return generator_loss + rtd_weight * rtd, rtd"
_ROBERTA = '"RoBERTa": {"objective": "b", "loss_positions": "a", "main_change": "b", "later_use": "a"}'
_ELECTRA = '"ELECTRA": {"objective": "c", "loss_positions": "c", "main_change": "c", "later_use": "b"}'

MUTANTS = [
    # --- pack-solution: RoBERTa's FULL-SENTENCES rows ---------------------------------------------------------------
    dict(exercise="pack-solution", name="pack-no-room-for-specials",
         why="the row budget forgets [CLS] and [SEP]: rows of max_seq_length + 2 positions",
         edits=[(_BUDGET, "budget = max_seq_length")]),
    dict(exercise="pack-solution", name="pack-no-document-separator",
         why="documents run into each other with no [SEP] between them",
         edits=[(_JOINT, "joint = []")]),
    dict(exercise="pack-solution", name="pack-separator-between-sentences",
         why="a [SEP] between every two sentences, not only between documents",
         edits=[(_JOINT, "joint = [sep_id] if current else []")]),
    dict(exercise="pack-solution", name="pack-one-document-per-row",
         why="every document starts a new row (DOC-SENTENCES): rows never cross a document boundary",
         edits=[("starts_document = True", "starts_document = True\n        if current:\n"
                 "            rows.append([cls_id, *current, sep_id])\n            current = []")]),
    dict(exercise="pack-solution", name="pack-splits-sentences-to-fill",
         why="the stream is cut at exactly max_seq_length - 2 pieces, splitting sentences (not FULL-SENTENCES)",
         edits=[(_FLUSH, "                current += joint + piece\n                while len(current) > budget:\n"
                 "                    rows.append([cls_id, *current[:budget], sep_id])\n"
                 "                    current = current[budget:]")]),
    dict(exercise="pack-solution", name="pack-drops-last-row",
         why="the last, shorter row is dropped",
         edits=[(_LAST, "    return rows")]),
    dict(exercise="pack-solution", name="pack-truncates-long-sentence",
         why="a sentence longer than a row keeps its first row-full of pieces; the rest is lost",
         edits=[("for start in range(0, len(sentence), budget):", "for start in range(0, min(len(sentence), 1)):")]),
    dict(exercise="pack-solution", name="pack-row-starts-with-separator",
         why="the document separator is kept when the next document starts a new row: rows begin [CLS] [SEP]",
         edits=[("current, joint = [], []", "current = []")]),
    # --- replace-solution: ELECTRA's corruption and RTD labels ------------------------------------------------------
    dict(exercise="replace-solution", name="replace-argmax",
         why="the generator's most likely piece instead of a sample from its distribution",
         edits=[(_SAMPLE, "samples = probs.argmax(-1)")]),
    dict(exercise="replace-solution", name="replace-label-is-target",
         why="every target labelled 'replaced', even where the sample equals the original",
         edits=[(_RETURN_REPLACED, "return corrupted, targets.float()")]),
    dict(exercise="replace-solution", name="replace-global-rng",
         why="the seeded generator is ignored: samples come from the global random state",
         edits=[(_SAMPLE, "samples = torch.multinomial(probs, 1).squeeze(-1)")]),
    dict(exercise="replace-solution", name="replace-column-major",
         why="the samples are put at the targets in column-major order, not in the row-major order of the logits",
         edits=[("corrupted[targets] = samples", "corrupted.T[targets.T] = samples")]),
    dict(exercise="replace-solution", name="replace-compared-with-labels",
         why="is_replaced compares with the labels (-100 at non-targets), so every non-target reads 'replaced'",
         edits=[(_RETURN_REPLACED, "return corrupted, (corrupted != labels).float()")]),
    dict(exercise="replace-solution", name="replace-in-place",
         why="the input is corrupted in place: the caller's ids change and every label reads 'original'",
         edits=[("corrupted = input_ids.clone()", "corrupted = input_ids")]),
    dict(exercise="replace-solution", name="replace-logits-as-weights",
         why="the logits are used as sampling weights (negatives clipped) without a softmax",
         edits=[(_PROBS, "probs = generator_logits.detach().float().clamp(min=0)")]),
    # --- electra-loss-solution: L = L_MLM + 50 L_RTD ----------------------------------------------------------------
    dict(exercise="electra-loss-solution", name="rtd-includes-padding",
         why="L_RTD averaged over every position, padding included",
         edits=[(_REAL, "real = torch.ones_like(attention_mask, dtype=torch.bool)")]),
    dict(exercise="electra-loss-solution", name="rtd-only-replaced",
         why="L_RTD only at the replaced positions, not at every position",
         edits=[(_REAL, "real = attention_mask.bool() & is_replaced.bool()")]),
    dict(exercise="electra-loss-solution", name="weight-on-mlm",
         why="the weight 50 multiplies L_MLM instead of L_RTD",
         edits=[(_TOTAL, "return rtd_weight * generator_loss + rtd, rtd")]),
    dict(exercise="electra-loss-solution", name="no-rtd-weight",
         why="L = L_MLM + L_RTD: the weight is left out",
         edits=[(_TOTAL, "return generator_loss + rtd, rtd")]),
    dict(exercise="electra-loss-solution", name="rtd-sum",
         why="L_RTD summed over the positions, not averaged",
         edits=[(_BCE, _BCE[:-1] + ', reduction="sum")')]),
    dict(exercise="electra-loss-solution", name="rtd-detached",
         why="the discriminator's logits are detached: L_RTD gives no gradient",
         edits=[("discriminator_logits[real].float()", "discriminator_logits[real].detach().float()")]),
    dict(exercise="electra-loss-solution", name="rtd-labels-flipped",
         why="the discriminator is trained to say 'original' where the piece was replaced",
         edits=[("is_replaced[real].float())", "1 - is_replaced[real].float())")]),
    dict(exercise="electra-loss-solution", name="default-weight-one",
         why="the default rtd_weight is 1, not the paper's 50",
         edits=[("rtd_weight: float = 50.0", "rtd_weight: float = 1.0")]),
    # --- compare-solution: the BERT / RoBERTa / ELECTRA table -------------------------------------------------------
    dict(exercise="compare-solution", name="roberta-keeps-nsp",
         why="RoBERTa's objective given as MLM + NSP",
         edits=[(_ROBERTA, _ROBERTA.replace('"objective": "b"', '"objective": "a"'))]),
    dict(exercise="compare-solution", name="electra-loss-at-targets",
         why="ELECTRA's loss positions given as the 15% targets (the discriminator's loss is at every position)",
         edits=[(_ELECTRA, _ELECTRA.replace('"loss_positions": "c"', '"loss_positions": "a"'))]),
    dict(exercise="compare-solution", name="electra-keeps-generator",
         why="the generator is said to be fine-tuned afterwards, not the discriminator",
         edits=[(_ELECTRA, _ELECTRA.replace('"later_use": "b"', '"later_use": "c"'))]),
    dict(exercise="compare-solution", name="bert-loss-at-mask-only",
         why="BERT's loss positions given as the [MASK] positions only",
         edits=[('"BERT": {"objective": "a", "loss_positions": "a"',
                 '"BERT": {"objective": "a", "loss_positions": "b"')]),
    # --- statements-solution: the five misconceptions ---------------------------------------------------------------
    dict(exercise="statements-solution", name="statements-all-false",
         why="every statement marked false, as if all were misconceptions",
         edits=[('"s2": True', '"s2": False'), ('"s4": True', '"s4": False'), ('"s6": True', '"s6": False'),
                ('"s8": True', '"s8": False'), ('"s10": True', '"s10": False')]),
    dict(exercise="statements-solution", name="statements-mask-at-test-time",
         why="believes [MASK] appears in fine-tuning and test inputs",
         edits=[('"s3": False', '"s3": True'), ('"s4": True', '"s4": False')]),
    dict(exercise="statements-solution", name="statements-nsp-everywhere",
         why="believes every BERT-family model uses NSP",
         edits=[('"s7": False', '"s7": True')]),
    dict(exercise="statements-solution", name="statements-word-embeddings-only",
         why="believes BERT learns only a word-embedding table",
         edits=[('"s5": False', '"s5": True')]),
    # --- quiz-solution: notation, choices, figures ------------------------------------------------------------------
    dict(exercise="quiz-solution", name="quiz-m-is-mask-positions",
         why="M taken as the positions showing [MASK]",
         edits=[('"M": "b"', '"M": "a"')]),
    dict(exercise="quiz-solution", name="quiz-nsp-generates",
         why="NSP taken as generating the next sentence",
         edits=[('"nsp_purpose": "a"', '"nsp_purpose": "c"')]),
    dict(exercise="quiz-solution", name="quiz-squad-test-f1",
         why="the SQuAD v1.1 test F1 (93.2) given for the dev F1 (90.9)",
         edits=[('"squad_f1": 90.9', '"squad_f1": 93.2')]),
    dict(exercise="quiz-solution", name="quiz-rate-in-percent",
         why="ModernBERT's rate given in percent (30), not as a share",
         edits=[('"modernbert_rate": 0.30', '"modernbert_rate": 30')]),
]
