"""Wrong implementations of chapter 06's exercises: each must lose points under the real nbgrader autograde."""

_TRANSFORM = "return self.LayerNorm(self.act(self.dense(x)))"
_MLM = "mlm_loss = F.cross_entropy(prediction_logits.reshape(-1, V), labels.reshape(-1), ignore_index=IGNORE_INDEX)"
_NSP = "nsp_loss = F.cross_entropy(seq_relationship_logits.reshape(-1, 2), next_sentence_label.reshape(-1))"
_POOL = "pooled = torch.tanh(pooler_dense(sequence_output[:, 0]))"
_RETURN = "return mlm_loss + nsp_loss, mlm_loss, nsp_loss"
_ACC = "return (prediction_logits.argmax(-1)[targets] == labels[targets]).float().mean().item()"

MUTANTS = [
    # --- lm-head-solution: BertPredictionHeadTransform.forward + BertLMPredictionHead -----------------------------
    dict(
        exercise="lm-head-solution",
        name="untied-copy",
        why="the decoder gets a copy of the embedding matrix instead of the same Parameter (not tied)",
        edits=[("self.decoder.weight = word_embeddings.weight",
                "self.decoder.weight = nn.Parameter(word_embeddings.weight.detach().clone())")],
    ),
    dict(
        exercise="lm-head-solution",
        name="decoder-keeps-own-bias",
        why="the decoder keeps the Linear's own bias instead of the head's `bias` (key cls.predictions.bias unused)",
        edits=[("        self.decoder.bias = self.bias\n", "")],
    ),
    dict(
        exercise="lm-head-solution",
        name="no-bias",
        why="a decoder without any bias",
        edits=[("self.decoder = nn.Linear(config.hidden_size, config.vocab_size)",
                "self.decoder = nn.Linear(config.hidden_size, config.vocab_size, bias=False)"),
               ("        self.decoder.bias = self.bias\n", "")],
    ),
    dict(
        exercise="lm-head-solution",
        name="layernorm-before-activation",
        why="LayerNorm before GELU: act(LayerNorm(dense(x)))",
        edits=[(_TRANSFORM, "return self.act(self.LayerNorm(self.dense(x)))")],
    ),
    dict(
        exercise="lm-head-solution",
        name="no-layernorm",
        why="the transform leaves out its LayerNorm",
        edits=[(_TRANSFORM, "return self.act(self.dense(x))")],
    ),
    dict(
        exercise="lm-head-solution",
        name="relu-hardcoded",
        why="ReLU instead of the configured GELU",
        edits=[(_TRANSFORM, "return self.LayerNorm(torch.relu(self.dense(x)))")],
    ),
    dict(
        exercise="lm-head-solution",
        name="gelu-hardcoded",
        why="F.gelu hard-coded: config.hidden_act is ignored",
        edits=[(_TRANSFORM, "return self.LayerNorm(F.gelu(self.dense(x)))")],
    ),
    dict(
        exercise="lm-head-solution",
        name="skips-transform",
        why="forward projects x straight onto the vocabulary, without the transform",
        edits=[("return self.decoder(self.transform(x))", "return self.decoder(x)")],
    ),
    dict(
        exercise="lm-head-solution",
        name="bias-added-twice",
        why="adds the bias again after the decoder (which already adds it)",
        edits=[("return self.decoder(self.transform(x))", "return self.decoder(self.transform(x)) + self.bias")],
    ),
    # --- nsp-head-solution: next_sentence_logits ------------------------------------------------------------------
    dict(
        exercise="nsp-head-solution",
        name="mean-pooling",
        why="pools the mean over positions instead of the [CLS] state",
        edits=[(_POOL, "pooled = torch.tanh(pooler_dense(sequence_output.mean(1)))")],
    ),
    dict(
        exercise="nsp-head-solution",
        name="last-token",
        why="pools the last position instead of [CLS]",
        edits=[(_POOL, "pooled = torch.tanh(pooler_dense(sequence_output[:, -1]))")],
    ),
    dict(
        exercise="nsp-head-solution",
        name="first-sequence",
        why="sequence_output[0] (the first pair of the batch) instead of sequence_output[:, 0] (every [CLS])",
        edits=[(_POOL, "pooled = torch.tanh(pooler_dense(sequence_output[0]))")],
    ),
    dict(
        exercise="nsp-head-solution",
        name="no-tanh",
        why="the pooler without its tanh",
        edits=[(_POOL, "pooled = pooler_dense(sequence_output[:, 0])")],
    ),
    dict(
        exercise="nsp-head-solution",
        name="relu-instead-of-tanh",
        why="ReLU instead of tanh in the pooler",
        edits=[(_POOL, "pooled = torch.relu(pooler_dense(sequence_output[:, 0]))")],
    ),
    dict(
        exercise="nsp-head-solution",
        name="no-pooler-dense",
        why="tanh of the raw [CLS] state: the pooler's dense layer is skipped",
        edits=[(_POOL, "pooled = torch.tanh(sequence_output[:, 0])")],
    ),
    dict(
        exercise="nsp-head-solution",
        name="returns-probabilities",
        why="softmax applied: probabilities instead of logits",
        edits=[("return seq_relationship(pooled)  # (B, 2)", "return seq_relationship(pooled).softmax(-1)")],
    ),
    # --- loss-solution: pretraining_loss --------------------------------------------------------------------------
    dict(
        exercise="loss-solution",
        name="mean-over-all-positions",
        why="L_MLM summed over targets but divided by all positions (padding and non-targets included)",
        edits=[(_MLM, "mlm_loss = F.cross_entropy(prediction_logits.reshape(-1, V), labels.reshape(-1), "
                      "ignore_index=IGNORE_INDEX, reduction='sum') / labels.numel()")],
    ),
    dict(
        exercise="loss-solution",
        name="padding-scored-as-class-0",
        why="labels -100 clamped to 0 and scored: padding and non-targets count as targets",
        edits=[(_MLM, "mlm_loss = F.cross_entropy(prediction_logits.reshape(-1, V), labels.reshape(-1).clamp(min=0))")],
    ),
    dict(
        exercise="loss-solution",
        name="ignores-pad-id-not-minus-100",
        why="ignore_index=0 (the [PAD] id) instead of -100: the -100 labels are scored",
        edits=[(", ignore_index=IGNORE_INDEX)", ", ignore_index=0)")],
    ),
    dict(
        exercise="loss-solution",
        name="mean-of-row-means",
        why="L_MLM averaged per sequence, then over sequences: rows with few targets weigh more",
        edits=[(_MLM, "per = F.cross_entropy(prediction_logits.reshape(-1, V), labels.reshape(-1), "
                      "ignore_index=IGNORE_INDEX, reduction='none').reshape(labels.shape)\n"
                      "    real = (labels != IGNORE_INDEX).float()\n"
                      "    mlm_loss = ((per * real).sum(-1) / real.sum(-1).clamp(min=1)).mean()")],
    ),
    dict(
        exercise="loss-solution",
        name="sum-not-mean",
        why="L_MLM summed over the targets instead of averaged",
        edits=[(_MLM, "mlm_loss = F.cross_entropy(prediction_logits.reshape(-1, V), labels.reshape(-1), "
                      "ignore_index=IGNORE_INDEX, reduction='sum')")],
    ),
    dict(
        exercise="loss-solution",
        name="nsp-term-forgotten",
        why="the returned loss is L_MLM alone",
        edits=[(_RETURN, "return mlm_loss, mlm_loss, nsp_loss")],
    ),
    dict(
        exercise="loss-solution",
        name="average-of-the-two",
        why="L = (L_MLM + L_NSP) / 2 instead of the sum",
        edits=[(_RETURN, "return (mlm_loss + nsp_loss) / 2, mlm_loss, nsp_loss")],
    ),
    dict(
        exercise="loss-solution",
        name="nsp-labels-flipped",
        why="NSP scored against 1 - label (IsNext and NotNext swapped)",
        edits=[(_NSP, "nsp_loss = F.cross_entropy(seq_relationship_logits.reshape(-1, 2), "
                      "1 - next_sentence_label.reshape(-1))")],
    ),
    dict(
        exercise="loss-solution",
        name="returns-python-floats",
        why="returns .item() floats: nothing to backpropagate",
        edits=[(_RETURN,
                "return (mlm_loss + nsp_loss).item(), mlm_loss.item(), nsp_loss.item()")],
    ),
    dict(
        exercise="loss-solution",
        name="nsp-detached",
        why="L_NSP detached: its logits never get a gradient",
        edits=[(_RETURN, "return mlm_loss + nsp_loss.detach(), mlm_loss, nsp_loss")],
    ),
    # --- accuracy-solution: masked_token_accuracy -----------------------------------------------------------------
    dict(
        exercise="accuracy-solution",
        name="counts-padding",
        why="accuracy over all positions: non-targets count as wrong",
        edits=[(_ACC, "return (prediction_logits.argmax(-1) == labels).float().mean().item()")],
    ),
    dict(
        exercise="accuracy-solution",
        name="no-empty-guard",
        why="no targets: returns nan instead of 0.0",
        edits=[("    if not targets.any():\n        return 0.0\n", "")],
    ),
    dict(
        exercise="accuracy-solution",
        name="returns-tensor",
        why="returns a 0-d tensor instead of a float",
        edits=[(_ACC, "return (prediction_logits.argmax(-1)[targets] == labels[targets]).float().mean()")],
    ),
    dict(
        exercise="accuracy-solution",
        name="label-zero-not-a-target",
        why="targets taken as labels > 0: a target whose label is id 0 is skipped",
        edits=[("targets = labels != IGNORE_INDEX", "targets = labels > 0")],
    ),
    dict(
        exercise="accuracy-solution",
        name="argmax-wrong-axis",
        why="argmax over positions (axis 1) instead of the vocabulary",
        edits=[(_ACC, "return (prediction_logits.argmax(1)[targets] == labels[targets]).float().mean().item()")],
    ),
    dict(
        exercise="accuracy-solution",
        name="divides-by-all-positions",
        why="correct targets divided by the number of positions, not of targets",
        edits=[(_ACC, "return (prediction_logits.argmax(-1)[targets] == labels[targets]).float().sum().item() "
                      "/ labels.numel()")],
    ),
]
