"""Wrong implementations of chapter 04's exercises: each must lose points under the real nbgrader autograde."""

_LABELS = "    labels = torch.where(targets, input_ids, torch.full_like(input_ids, IGNORE_INDEX))\n"
_CORRUPT_CALL = ("    inputs = corrupt(input_ids, targets, vocab_size, mask_token_id, mask_replace_prob, "
                 "random_replace_prob, generator)\n")
_TO_RANDOM = "to_random = targets & (u >= mask_replace_prob) & (u < mask_replace_prob + random_replace_prob)"

MUTANTS = [
    # ---- expected counts
    dict(
        exercise="counts-solution",
        name="counts-unchanged-equals-random",
        why="unchanged = the random count (true only when the two shares are equal, as in 10/10)",
        edits=[('"unchanged": targets - mask - random', '"unchanged": random')],
    ),
    dict(
        exercise="counts-solution",
        name="counts-random-of-the-rest",
        why="random share taken of the non-[MASK] targets instead of all targets",
        edits=[("targets * random_replace_prob", "(targets - targets * mask_replace_prob) * random_replace_prob")],
    ),
    dict(
        exercise="counts-solution",
        name="counts-shares-not-counts",
        why="shares of the input (0.15, 0.12, ...) instead of counts for num_tokens pieces",
        edits=[("targets = num_tokens * mlm_probability", "targets = mlm_probability")],
    ),
    dict(
        exercise="counts-solution",
        name="counts-rounded",
        why="counts rounded to whole pieces (1.5 -> 2)",
        edits=[("mask, random = targets * mask_replace_prob, targets * random_replace_prob",
                "mask, random = round(targets * mask_replace_prob), round(targets * random_replace_prob)")],
    ),
    dict(
        exercise="counts-solution",
        name="counts-hard-coded",
        why="the quiz's answer hard-coded: 15 / 12 / 1.5 / 1.5 scaled by num_tokens only",
        edits=[('return {"targets": targets, "mask": mask, "random": random, "unchanged": targets - mask - random}',
                'return {"targets": 0.15 * num_tokens, "mask": 0.12 * num_tokens, "random": 0.015 * num_tokens, '
                '"unchanged": 0.015 * num_tokens}')],
    ),
    # ---- corruption of the targets
    dict(
        exercise="corrupt-solution",
        name="corrupt-non-targets",
        why="[MASK] is put at non-target positions too",
        edits=[("to_mask = targets & (u < mask_replace_prob)", "to_mask = u < mask_replace_prob")],
    ),
    dict(
        exercise="corrupt-solution",
        name="corrupt-random-gets-unchanged-share",
        why="random and unchanged ranges swapped (invisible at 10/10, wrong for other splits)",
        edits=[(_TO_RANDOM, "to_random = targets & (u >= mask_replace_prob + random_replace_prob)")],
    ),
    dict(
        exercise="corrupt-solution",
        name="corrupt-independent-draws",
        why="a second independent draw for random: 10% of the remaining 20% instead of 10% of all",
        edits=[(_TO_RANDOM, "to_random = targets & ~to_mask & (torch.rand(input_ids.shape, generator=generator) "
                            "< random_replace_prob)")],
    ),
    dict(
        exercise="corrupt-solution",
        name="corrupt-half-of-the-rest",
        why="Hugging Face's old rule hard-coded: half of the non-[MASK] targets random, whatever the split",
        edits=[(_TO_RANDOM, "to_random = targets & ~to_mask & (torch.rand(input_ids.shape, generator=generator) "
                            "< 0.5)")],
    ),
    dict(
        exercise="corrupt-solution",
        name="corrupt-in-place",
        why="modifies input_ids in place (no copy)",
        edits=[("inputs = input_ids.clone()", "inputs = input_ids")],
    ),
    dict(
        exercise="corrupt-solution",
        name="corrupt-global-rng",
        why="ignores the generator (global RNG): not repeatable",
        edits=[("u = torch.rand(input_ids.shape, generator=generator)", "u = torch.rand(input_ids.shape)")],
    ),
    dict(
        exercise="corrupt-solution",
        name="corrupt-random-from-batch",
        why="random replacements drawn from the batch's own ids instead of the whole vocabulary",
        edits=[("random_ids = torch.randint(vocab_size, input_ids.shape, generator=generator, dtype=input_ids.dtype)",
                "random_ids = input_ids.flatten()[torch.randperm(input_ids.numel(), generator=generator)]"
                ".view_as(input_ids)")],
    ),
    dict(
        exercise="corrupt-solution",
        name="corrupt-reference-package",
        why="calls the reference package's corrupt instead of corrupting",
        edits=[("    u = torch.rand(input_ids.shape, generator=generator)  # (B, T)\n",
                "    import minibert.masking\n"
                "    return minibert.masking.corrupt(input_ids, targets, vocab_size, mask_token_id, mask_replace_prob,"
                " random_replace_prob, generator)\n"
                "    u = None\n")],
    ),
    # ---- mask_tokens: num_targets, bernoulli_targets, labels
    dict(
        exercise="mask-tokens-solution",
        name="labels-only-at-mask",
        why="labels only where the input became [MASK] (random and unchanged targets unscored)",
        edits=[(_LABELS, "    pass\n"),
               (_CORRUPT_CALL, _CORRUPT_CALL + "    labels = torch.where(targets & (inputs == mask_token_id), "
                                               "input_ids, torch.full_like(input_ids, IGNORE_INDEX))\n")],
    ),
    dict(
        exercise="mask-tokens-solution",
        name="labels-drop-random",
        why="labels at [MASK] and unchanged targets, not at randomly replaced ones",
        edits=[(_LABELS, "    pass\n"),
               (_CORRUPT_CALL, _CORRUPT_CALL + "    labels = torch.where(targets & ((inputs == mask_token_id) | "
                                               "(inputs == input_ids)), input_ids, torch.full_like(input_ids, "
                                               "IGNORE_INDEX))\n")],
    ),
    dict(
        exercise="mask-tokens-solution",
        name="labels-zero-elsewhere",
        why="0 instead of -100 at non-targets",
        edits=[("torch.full_like(input_ids, IGNORE_INDEX)", "torch.zeros_like(input_ids)")],
    ),
    dict(
        exercise="mask-tokens-solution",
        name="labels-from-corrupted-input",
        why="labels hold the corrupted input instead of the original id",
        edits=[(_LABELS, "    pass\n"),
               (_CORRUPT_CALL, _CORRUPT_CALL + "    labels = torch.where(targets, inputs, "
                                               "torch.full_like(input_ids, IGNORE_INDEX))\n")],
    ),
    dict(
        exercise="mask-tokens-solution",
        name="bernoulli-specials-maskable",
        why="special tokens and padding can become targets",
        edits=[("return candidates & (torch.rand(candidates.shape, generator=generator) < mlm_probability)",
                "return torch.rand(candidates.shape, generator=generator) < mlm_probability")],
    ),
    dict(
        exercise="mask-tokens-solution",
        name="bernoulli-is-fixed-count",
        why="Bernoulli mode ignored: an exact count per row (the fixed-count rule) instead of independent draws",
        edits=[("return candidates & (torch.rand(candidates.shape, generator=generator) < mlm_probability)",
                "return _fixed_count_targets(candidates, mlm_probability, None, None, generator)")],
    ),
    dict(
        exercise="mask-tokens-solution",
        name="bernoulli-shared-across-rows",
        why="one draw per position shared by all rows of the batch",
        edits=[("torch.rand(candidates.shape, generator=generator)",
                "torch.rand(candidates.shape[-1], generator=generator)")],
    ),
    dict(
        exercise="mask-tokens-solution",
        name="bernoulli-inverted",
        why="draw >= p: 85% of the candidates become targets",
        edits=[("< mlm_probability)\n    ### END SOLUTION", ">= mlm_probability)\n    ### END SOLUTION")],
    ),
    dict(
        exercise="mask-tokens-solution",
        name="num-targets-floor",
        why="int() truncation instead of round(): 4.95 -> 4",
        edits=[("k = max(1, round(num_candidates * mlm_probability))",
                "k = max(1, int(num_candidates * mlm_probability))")],
    ),
    dict(
        exercise="mask-tokens-solution",
        name="num-targets-counts-cls-sep",
        why="counts [CLS] and [SEP] in n (n + 2), as the original script does",
        edits=[("round(num_candidates * mlm_probability)", "round((num_candidates + 2) * mlm_probability)")],
    ),
    dict(
        exercise="mask-tokens-solution",
        name="num-targets-no-minimum",
        why="no max(1, ...): short rows get no target",
        edits=[("k = max(1, round(num_candidates * mlm_probability))", "k = round(num_candidates * mlm_probability)")],
    ),
    dict(
        exercise="mask-tokens-solution",
        name="num-targets-ceil",
        why="rounds up (ceil) instead of to the nearest count: 21 * 0.15 = 3.15 -> 4",
        edits=[("k = max(1, round(num_candidates * mlm_probability))",
                "k = max(1, -int(-(num_candidates * mlm_probability) // 1))")],
    ),
    dict(
        exercise="mask-tokens-solution",
        name="num-targets-cap-ignored",
        why="max_predictions ignored",
        edits=[("return min(k, max_predictions) if max_predictions is not None else k", "return k")],
    ),
    # ---- whole words
    dict(
        exercise="wwm-solution",
        name="wwm-every-piece-a-word",
        why="## pieces start a new word: whole-word masking becomes per-piece masking",
        edits=[('if not token.startswith("##") or current < 0:', "if True:")],
    ),
    dict(
        exercise="wwm-solution",
        name="wwm-pad-is-a-word",
        why="only [CLS] and [SEP] treated as special ([PAD], [MASK] numbered as words)",
        edits=[('if token in special_tokens and token != "[UNK]":', 'if token in ("[CLS]", "[SEP]"):')],
    ),
    dict(
        exercise="wwm-solution",
        name="wwm-unk-special",
        why="[UNK] gets -1 although it stands for a word",
        edits=[('if token in special_tokens and token != "[UNK]":', "if token in special_tokens:")],
    ),
    dict(
        exercise="wwm-solution",
        name="wwm-reset-per-segment",
        why="word numbering restarts after every special token",
        edits=[("            word_ids.append(-1)\n", "            word_ids.append(-1)\n            current = -1\n")],
    ),
    dict(
        exercise="wwm-solution",
        name="wwm-leading-continuation",
        why="a leading ## piece gets word -1 instead of starting word 0",
        edits=[('if not token.startswith("##") or current < 0:', 'if not token.startswith("##"):')],
    ),
    dict(
        exercise="wwm-solution",
        name="wwm-special-tokens-ignored",
        why="a hard-coded special set instead of the special_tokens argument",
        edits=[('if token in special_tokens and token != "[UNK]":',
                'if token in ("[CLS]", "[SEP]", "[PAD]", "[MASK]"):')],
    ),
    dict(
        exercise="mask-tokens-solution",
        name="padding-can-be-target",
        why="attention_mask ignored: padding that special_tokens_mask does not mark becomes a target",
        edits=[("    if attention_mask is not None:\n        candidates &= attention_mask.bool()\n", "")],
    ),
]
