"""Wrong implementations of chapter 03's exercises: each must lose points under the real nbgrader autograde."""

_LAYER = ("        attended, probs = self.attention(hidden_states, mask, output_attentions)  # LayerNorm(x + Attn(x))\n"
          "        return self.output(self.intermediate(attended), attended), probs  # LayerNorm(h + FFN(h))\n")

MUTANTS = [
    # ---- scaled dot-product attention
    dict(
        exercise="sdpa-solution",
        name="sdpa-no-scaling",
        why="scores QK^T without the 1/sqrt(d) scale",
        edits=[("query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))", "query @ key.transpose(-2, -1)")],
    ),
    dict(
        exercise="sdpa-solution",
        name="sdpa-scale-by-d",
        why="scores divided by d instead of sqrt(d)",
        edits=[("/ math.sqrt(query.size(-1))", "/ query.size(-1)")],
    ),
    dict(
        exercise="sdpa-solution",
        name="sdpa-softmax-over-queries",
        why="softmax over the query axis (-2) instead of the key axis",
        edits=[("scores.softmax(dim=-1)", "scores.softmax(dim=-2)")],
    ),
    dict(
        exercise="sdpa-solution",
        name="sdpa-mask-after-softmax",
        why="the additive mask is added to the probabilities, after the softmax",
        edits=[("        scores = scores + mask\n", "        pass\n"),
               ("probs = scores.softmax(dim=-1)", "probs = scores.softmax(dim=-1) + (0.0 if mask is None else mask)")],
    ),
    dict(
        exercise="sdpa-solution",
        name="sdpa-mask-wrong-axis",
        why="the mask is transposed: it hides queries instead of keys",
        edits=[("scores = scores + mask", "scores = scores + mask.transpose(-2, -1)")],
    ),
    dict(
        exercise="sdpa-solution",
        name="sdpa-dropout-ignored",
        why="dropout_p is ignored: no dropout on the probabilities",
        edits=[("weights = F.dropout(probs, p=dropout_p) if dropout_p > 0 else probs", "weights = probs")],
    ),
    dict(
        exercise="sdpa-solution",
        name="sdpa-dropout-on-output",
        why="dropout on the attention output instead of on the probabilities",
        edits=[("return weights @ value, probs",
                "return (F.dropout(probs @ value, p=dropout_p) if dropout_p > 0 else probs @ value), probs")],
    ),
    dict(
        exercise="sdpa-solution",
        name="sdpa-probs-after-dropout",
        why="returns the probabilities after dropout",
        edits=[("return weights @ value, probs", "return weights @ value, weights")],
    ),
    # ---- bidirectional vs causal pattern
    dict(
        exercise="pattern-solution",
        name="pattern-triu",
        why="causal pattern upper-triangular (j >= i): reads the future",
        edits=[("torch.tril(allowed)", "torch.triu(allowed)")],
    ),
    dict(
        exercise="pattern-solution",
        name="pattern-strict-causal",
        why="causal pattern without the diagonal (j < i): a position cannot read itself",
        edits=[("torch.tril(allowed)", "torch.tril(allowed, diagonal=-1)")],
    ),
    dict(
        exercise="pattern-solution",
        name="pattern-causal-ignored",
        why="always bidirectional: the causal flag is ignored",
        edits=[("return torch.tril(allowed) if causal else allowed", "return allowed")],
    ),
    dict(
        exercise="pattern-solution",
        name="pattern-float",
        why="a 0/1 float tensor instead of a bool mask",
        edits=[("torch.ones(seq_len, seq_len, dtype=torch.bool)", "torch.ones(seq_len, seq_len)")],
    ),
    dict(
        exercise="pattern-solution",
        name="pattern-hard-coded-6",
        why="hard-coded for the six-word example",
        edits=[("torch.ones(seq_len, seq_len, dtype=torch.bool)", "torch.ones(6, 6, dtype=torch.bool)")],
    ),
    # ---- multi-head self-attention
    dict(
        exercise="mha-solution",
        name="mha-split-without-transpose",
        why="heads split with view(B, A, T, d): each head mixes positions and features",
        edits=[("x.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)",
                "x.view(B, self.num_heads, T, self.head_dim)")],
    ),
    dict(
        exercise="mha-solution",
        name="mha-heads-interleaved",
        why="head h takes every A-th column instead of the block h*d:(h+1)*d",
        edits=[("x.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)",
                "x.view(B, T, self.head_dim, self.num_heads).permute(0, 3, 1, 2)")],
    ),
    dict(
        exercise="mha-solution",
        name="mha-merge-without-transpose",
        why="heads merged with reshape(B, T, H) without moving the head axis back",
        edits=[("context.transpose(1, 2).reshape(B, T, H)", "context.reshape(B, T, H)")],
    ),
    dict(
        exercise="mha-solution",
        name="mha-dropout-in-eval",
        why="attention dropout also in eval mode",
        edits=[("dropout_p = self.dropout_p if self.training else 0.0", "dropout_p = self.dropout_p")],
    ),
    dict(
        exercise="mha-solution",
        name="mha-no-dropout",
        why="no attention dropout in training mode",
        edits=[("dropout_p = self.dropout_p if self.training else 0.0", "dropout_p = 0.0")],
    ),
    dict(
        exercise="mha-solution",
        name="mha-fused-path-ignores-mask",
        why="the fused path drops the padding mask",
        edits=[("attn_mask=mask, dropout_p=dropout_p", "attn_mask=None, dropout_p=dropout_p")],
    ),
    # ---- post-LN encoder layer
    dict(
        exercise="layer-solution",
        name="layer-ffn-residual-from-input",
        why="the feed-forward residual adds the layer input x instead of h",
        edits=[("self.output(self.intermediate(attended), attended)",
                "self.output(self.intermediate(attended), hidden_states)")],
    ),
    dict(
        exercise="layer-solution",
        name="layer-tanh-gelu",
        why="tanh-approximate GELU instead of the exact erf GELU",
        edits=[("self.output(self.intermediate(attended), attended)",
                "self.output(F.gelu(self.intermediate.dense(attended), approximate='tanh'), attended)")],
    ),
    dict(
        exercise="layer-solution",
        name="layer-relu",
        why="ReLU instead of GELU in the feed-forward block",
        edits=[("self.output(self.intermediate(attended), attended)",
                "self.output(F.relu(self.intermediate.dense(attended)), attended)")],
    ),
    dict(
        exercise="layer-solution",
        name="layer-pre-ln",
        why="pre-LN (GPT-2): LayerNorm before each block, residual added after",
        edits=[(_LAYER,
                "        a, o = self.attention.output, self.output\n"
                "        context, probs = self.attention.self(a.LayerNorm(hidden_states), mask, output_attentions)\n"
                "        h = hidden_states + a.dropout(a.dense(context))\n"
                "        return h + o.dropout(o.dense(self.intermediate(o.LayerNorm(h)))), probs\n")],
    ),
    dict(
        exercise="layer-solution",
        name="layer-no-dropout",
        why="post-LN written out without the residual dropout (visible only in training mode)",
        edits=[(_LAYER,
                "        a, o = self.attention.output, self.output\n"
                "        context, probs = self.attention.self(hidden_states, mask, output_attentions)\n"
                "        h = a.LayerNorm(a.dense(context) + hidden_states)\n"
                "        return o.LayerNorm(o.dense(self.intermediate(h)) + h), probs\n")],
    ),
    dict(
        exercise="layer-solution",
        name="layer-layernorm-before-dropout",
        why="dropout after the LayerNorm instead of on the branch before the add",
        edits=[(_LAYER,
                "        a, o = self.attention.output, self.output\n"
                "        context, probs = self.attention.self(hidden_states, mask, output_attentions)\n"
                "        h = a.dropout(a.LayerNorm(a.dense(context) + hidden_states))\n"
                "        return o.dropout(o.LayerNorm(o.dense(self.intermediate(h)) + h)), probs\n")],
    ),
    dict(
        exercise="layer-solution",
        name="layer-no-ffn-residual",
        why="the feed-forward block has no residual connection",
        edits=[("return self.output(self.intermediate(attended), attended), probs",
                "return self.output(self.intermediate(attended), torch.zeros_like(attended)), probs")],
    ),
    dict(
        exercise="layer-solution",
        name="layer-mask-dropped",
        why="the padding mask is not passed on to the attention block",
        edits=[("self.attention(hidden_states, mask, output_attentions)",
                "self.attention(hidden_states, None, output_attentions)")],
    ),
    # ---- parameter counts
    dict(
        exercise="params-solution",
        name="params-on-cpu",
        why="builds the model for real on the CPU instead of the meta device",
        edits=[("    with torch.device(\"meta\"):\n        model = BertModel(config)\n",
                "    model = BertModel(config)\n")],
    ),
    dict(
        exercise="params-solution",
        name="params-to-meta-after-building",
        why="builds on the CPU, then moves to meta (allocates everything first)",
        edits=[("    with torch.device(\"meta\"):\n        model = BertModel(config)\n",
                "    model = BertModel(config).to(\"meta\")\n")],
    ),
    dict(
        exercise="params-solution",
        name="params-count-tensors",
        why="counts parameter tensors, not their elements",
        edits=[("sum(p.numel() for p in model.parameters())", "len(list(model.parameters()))")],
    ),
    dict(
        exercise="params-solution",
        name="params-no-pooler",
        why="counts BertModel without its pooler",
        edits=[("model = BertModel(config)", "model = BertModel(config, add_pooling_layer=False)")],
    ),
    dict(
        exercise="params-solution",
        name="params-formula-4h",
        why="a hand formula that assumes intermediate_size = 4H and two segments",
        edits=[("    with torch.device(\"meta\"):\n        model = BertModel(config)\n"
                "    return sum(p.numel() for p in model.parameters())\n",
                "    H, L = config.hidden_size, config.num_hidden_layers\n"
                "    per_layer = 4 * (H * H + H) + 2 * H + 2 * (4 * H * H) + 4 * H + H + 2 * H\n"
                "    embeddings = (config.vocab_size + config.max_position_embeddings + 2) * H + 2 * H\n"
                "    return embeddings + L * per_layer + H * H + H\n")],
    ),
    dict(
        exercise="params-solution",
        name="params-reference-package",
        why="calls the reference package's count_parameters instead of counting",
        edits=[("    with torch.device(\"meta\"):\n        model = BertModel(config)\n"
                "    return sum(p.numel() for p in model.parameters())\n",
                "    import minibert.model\n"
                "    return minibert.model.count_parameters(config)\n")],
    ),
]
