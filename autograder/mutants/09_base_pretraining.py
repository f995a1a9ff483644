"""Wrong implementations of chapter 09's exercise: each must lose points under the real nbgrader autograde."""

_RETURN = "return 6 * (encoder + mlm_head + nsp_head) + 12 * L * H * seq_len"
_ENCODER = "encoder = L * (4 * H * H + 2 * H * F)"
_MLM = "mlm_head = target_fraction * (H * H + V * H)"
_NSP = "nsp_head = (H * H + 2 * H) / seq_len"
_MFU = "return tokens_per_second * flops_per_token / peak if peak else None"

MUTANTS = [
    # --- flops-solution: flops_per_token ----------------------------------------------------------------------------
    dict(exercise="flops-solution", name="forward-only",
         why="the forward pass only: 2N + 4LHT, the backward pass (twice the forward) forgotten",
         edits=[(_RETURN, "return 2 * (encoder + mlm_head + nsp_head) + 4 * L * H * seq_len")]),
    dict(exercise="flops-solution", name="decoder-at-every-position",
         why="the MLM head counted at every position, as if the logits were computed everywhere",
         edits=[(_MLM, "mlm_head = H * H + V * H")]),
    dict(exercise="flops-solution", name="no-attention-term",
         why="6N only: the attention scores and the mix of values (12LHT) are left out",
         edits=[(_RETURN, "return 6 * (encoder + mlm_head + nsp_head)")]),
    dict(exercise="flops-solution", name="attention-per-sequence",
         why="the attention term counted per sequence (T^2) instead of per position",
         edits=[(_RETURN, "return 6 * (encoder + mlm_head + nsp_head) + 12 * L * H * seq_len * seq_len")]),
    dict(exercise="flops-solution", name="attention-forward-only",
         why="the attention term without its backward pass: 4LHT",
         edits=[(_RETURN, "return 6 * (encoder + mlm_head + nsp_head) + 4 * L * H * seq_len")]),
    dict(exercise="flops-solution", name="embeddings-as-matmul",
         why="the word embeddings counted as a matrix product at every position (a lookup costs no FLOPs)",
         edits=[(_ENCODER, "encoder = L * (4 * H * H + 2 * H * F) + V * H")]),
    dict(exercise="flops-solution", name="one-feed-forward-matrix",
         why="the feed-forward block counted as one H x F matrix instead of two",
         edits=[(_ENCODER, "encoder = L * (4 * H * H + H * F)")]),
    dict(exercise="flops-solution", name="qkv-only",
         why="the attention output projection forgotten: 3H^2 per layer instead of 4H^2",
         edits=[(_ENCODER, "encoder = L * (3 * H * H + 2 * H * F)")]),
    dict(exercise="flops-solution", name="nsp-per-position",
         why="the pooler and NSP classifier counted at every position, not once per sequence",
         edits=[(_NSP, "nsp_head = H * H + 2 * H")]),
    dict(exercise="flops-solution", name="no-mlm-transform",
         why="the MLM head's transform (H x H before the decoder) forgotten",
         edits=[(_MLM, "mlm_head = target_fraction * V * H")]),
    dict(exercise="flops-solution", name="delegates-to-package",
         why="flops_per_token delegates to the installed minibert package",
         edits=[(_ENCODER, "from minibert.train import flops_per_token as reference\n\n"
                           "    return reference(config, seq_len, target_fraction)\n    " + _ENCODER)]),
    # --- flops-solution: mfu ----------------------------------------------------------------------------------------
    dict(exercise="flops-solution", name="mfu-peak-in-tflops",
         why="the peak read as TFLOP/s and multiplied by 1e12 again",
         edits=[(_MFU, "return tokens_per_second * flops_per_token / (peak * 1e12) if peak else None")]),
    dict(exercise="flops-solution", name="mfu-zero-without-peak",
         why="an unknown peak gives 0.0 (a measured MFU of 0) instead of None",
         edits=[(_MFU, "return tokens_per_second * flops_per_token / peak if peak else 0.0")]),
    dict(exercise="flops-solution", name="mfu-percent",
         why="MFU in percent, not as a share (0.45, not 45)",
         edits=[(_MFU, "return 100 * tokens_per_second * flops_per_token / peak if peak else None")]),
]
