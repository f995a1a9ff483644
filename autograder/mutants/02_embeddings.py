"""Wrong implementations of chapter 02's exercises: each must lose points under the real nbgrader autograde."""

_RETURN = "return self.dropout(self.LayerNorm(x))"
_DEFAULT_POSITIONS = "position_ids = torch.arange(T, device=input_ids.device).unsqueeze(0)  # (1, T)"

MUTANTS = [
    # --- embeddings-solution: BertEmbeddings.forward ----------------------------------------------------------------
    dict(
        exercise="embeddings-solution",
        name="layernorm-after-dropout",
        why="LayerNorm(dropout(x)) instead of dropout(LayerNorm(x))",
        edits=[(_RETURN, "return self.LayerNorm(self.dropout(x))")],
    ),
    dict(
        exercise="embeddings-solution",
        name="no-dropout",
        why="no dropout: LayerNorm(x) only (eval-mode outputs are unchanged)",
        edits=[(_RETURN, "return self.LayerNorm(x)")],
    ),
    dict(
        exercise="embeddings-solution",
        name="dropout-twice",
        why="dropout on the sum and again after the LayerNorm",
        edits=[(_RETURN, "return self.dropout(self.LayerNorm(self.dropout(x)))")],
    ),
    dict(
        exercise="embeddings-solution",
        name="dropout-p-hardcoded",
        why="F.dropout with p=0.1 written out: config.hidden_dropout_prob is ignored",
        edits=[(_RETURN, "return torch.nn.functional.dropout(self.LayerNorm(x), 0.1, self.training)")],
    ),
    dict(
        exercise="embeddings-solution",
        name="dropout-always-on",
        why="F.dropout without training=self.training: dropout also in eval mode",
        edits=[(_RETURN, "return torch.nn.functional.dropout(self.LayerNorm(x), self.dropout.p)")],
    ),
    dict(
        exercise="embeddings-solution",
        name="no-layernorm",
        why="the LayerNorm is left out: dropout(token + segment + position)",
        edits=[(_RETURN, "return self.dropout(x)")],
    ),
    dict(
        exercise="embeddings-solution",
        name="layernorm-without-affine",
        why="F.layer_norm without the LayerNorm's weight and bias",
        edits=[(_RETURN,
                "return self.dropout(torch.nn.functional.layer_norm(x, x.shape[-1:], eps=self.LayerNorm.eps))")],
    ),
    dict(
        exercise="embeddings-solution",
        name="given-positions-ignored",
        why="position_ids is always 0..T-1, even when the caller gives other positions",
        edits=[("if position_ids is None:\n            " + _DEFAULT_POSITIONS,
                "if True:\n            " + _DEFAULT_POSITIONS)],
    ),
    dict(
        exercise="embeddings-solution",
        name="positions-from-1",
        why="positions 1..T instead of 0..T-1",
        edits=[(_DEFAULT_POSITIONS, "position_ids = torch.arange(1, T + 1, device=input_ids.device).unsqueeze(0)")],
    ),
    dict(
        exercise="embeddings-solution",
        name="positions-batch-axis",
        why="positions counted along the batch axis (input_ids.shape[0]) instead of the sequence axis",
        edits=[(_DEFAULT_POSITIONS,
                "position_ids = torch.arange(input_ids.shape[0], device=input_ids.device).unsqueeze(-1)")],
    ),
    dict(
        exercise="embeddings-solution",
        name="positions-hardcoded-length",
        why="positions 0..6 written out: fits the visible test's T = 7 only",
        edits=[(_DEFAULT_POSITIONS, "position_ids = torch.arange(7).unsqueeze(0)")],
    ),
    dict(
        exercise="embeddings-solution",
        name="segments-ignored",
        why="token_type_ids always zeros: the given segment ids are ignored",
        edits=[("if token_type_ids is None:\n            token_type_ids = torch.zeros_like(input_ids)",
                "if True:\n            token_type_ids = torch.zeros_like(input_ids)")],
    ),
    dict(
        exercise="embeddings-solution",
        name="default-segments-ones",
        why="missing token_type_ids become all ones instead of all zeros",
        edits=[("token_type_ids = torch.zeros_like(input_ids)", "token_type_ids = torch.ones_like(input_ids)")],
    ),
    dict(
        exercise="embeddings-solution",
        name="no-segment-embedding",
        why="the segment embedding is not added",
        edits=[("+ self.token_type_embeddings(token_type_ids)  # (B, T, H)", "")],
    ),
    dict(
        exercise="embeddings-solution",
        name="embeddings-reference-package",
        why="BertEmbeddings imported from the installed minibert package instead of written",
        edits=[(_RETURN, _RETURN + "\n\n\nfrom minibert.embeddings import BertEmbeddings  # noqa")],
    ),
    dict(
        exercise="embeddings-solution",
        name="forward-delegates-to-reference",
        why="forward calls the installed minibert package's BertEmbeddings.forward on the student's module",
        edits=[(_RETURN, "from minibert.embeddings import BertEmbeddings as Reference\n\n"
                         "        return Reference.forward(self, input_ids, token_type_ids, position_ids)")],
    ),
    # --- count-solution: embedding_parameter_count -----------------------------------------------------------------
    dict(
        exercise="count-solution",
        name="no-layernorm-parameters",
        why="the LayerNorm's 2H parameters are left out",
        edits=[(" + 2 * H", "")],
    ),
    dict(
        exercise="count-solution",
        name="layernorm-weight-only",
        why="the LayerNorm counted as H parameters (its bias forgotten)",
        edits=[(" + 2 * H", " + H")],
    ),
    dict(
        exercise="count-solution",
        name="padding-row-excluded",
        why="the [PAD] row of the token table left out (it is a parameter, only initialised to zero)",
        edits=[("(config.vocab_size + ", "(config.vocab_size - 1 + ")],
    ),
    dict(
        exercise="count-solution",
        name="positions-hardcoded-512",
        why="512 positions written out instead of config.max_position_embeddings",
        edits=[("config.max_position_embeddings", "512")],
    ),
    dict(
        exercise="count-solution",
        name="segments-hardcoded-2",
        why="2 segments written out instead of config.type_vocab_size",
        edits=[("config.type_vocab_size", "2")],
    ),
    dict(
        exercise="count-solution",
        name="counts-a-built-model",
        why="builds BertEmbeddings(config) and counts its parameters instead of computing from the config",
        edits=[("    H = config.hidden_size\n",
                "    return sum(p.numel() for p in BertEmbeddings(config).parameters())\n")],
    ),
    dict(
        exercise="count-solution",
        name="visible-answers-hardcoded",
        why="returns the visible test's two numbers, looked up by hidden size",
        edits=[("    H = config.hidden_size\n", "    return {128: 78_720, 48: 84_000}[config.hidden_size]\n")],
    ),
    dict(
        exercise="count-solution",
        name="float-result",
        why="a float (computed with /) instead of an int",
        edits=[(" + 2 * H", " + H * 4 / 2")],
    ),
]
