"""The unpadded encoder (chapter 09) computes the padded model's function: outputs, loss and gradients."""

import pytest
import torch

from minibert import BertConfig, BertForPreTraining
from minibert.bench import pretraining_batch
from minibert.unpadded import UnpaddedBertForPreTraining, packing, unpadded_encoder

CONFIG = BertConfig.tiny(vocab_size=600, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def pair(config: BertConfig = CONFIG, device: str = "cpu"):
    torch.manual_seed(0)
    padded = BertForPreTraining(config)
    unpadded = UnpaddedBertForPreTraining(config)
    unpadded.load_state_dict(padded.state_dict())
    return padded.to(device), unpadded.to(device)


def batch(rows: int = 16, seq: int = 24, vocab: int = 600, seed: int = 0, device: str = "cpu"):
    b = pretraining_batch(rows, seq, vocab, torch.Generator().manual_seed(seed))
    assert 0 < (b["attention_mask"] == 0).sum() < b["attention_mask"].numel() // 2, "some padding, not mostly"
    return {k: v.to(device) for k, v in b.items()}


def test_packing_round_trip_keeps_the_real_pieces_and_zeros_the_padding():
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0], [0, 1, 1, 1]])
    p = packing(mask)
    x = torch.arange(12.0).view(3, 4)[..., None].expand(3, 4, 2)
    packed = p.pack(x)
    assert packed.shape == (8, 2) and packed[:, 0].tolist() == [0, 1, 2, 4, 5, 9, 10, 11]
    back = p.unpack(packed)
    assert torch.equal(back[mask.bool()], x[mask.bool()]) and (back[~mask.bool()] == 0).all()


def test_same_loss_logits_and_gradients_as_the_padded_model_in_fp32():
    padded, unpadded = pair()
    b = batch()
    ours, theirs = (m(**b, targets_only=True) for m in (unpadded, padded))
    torch.testing.assert_close(ours.loss, theirs.loss, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(ours.prediction_logits, theirs.prediction_logits, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ours.seq_relationship_logits, theirs.seq_relationship_logits, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ours.mlm_loss, theirs.mlm_loss)
    torch.testing.assert_close(ours.nsp_loss, theirs.nsp_loss)
    ours.loss.backward()
    theirs.loss.backward()
    grads = dict(padded.named_parameters())
    for name, parameter in unpadded.named_parameters():
        torch.testing.assert_close(parameter.grad, grads[name].grad, rtol=1e-4, atol=1e-6, msg=name)


def test_states_at_every_real_piece_match_whatever_the_padding_pattern():
    """Packing is by the mask, not by 'padding at the end': left padding and holes give the padded model's states at
    every real piece, with the padded layout's position ids."""
    padded, _ = pair()
    ids = torch.randint(5, 600, (3, 10), generator=torch.Generator().manual_seed(1))
    mask = torch.tensor([[1] * 10, [1] * 6 + [0] * 4, [0, 0, 1, 1, 1, 0, 1, 1, 1, 1]])
    types = torch.tensor([[0] * 5 + [1] * 5] * 3)
    expected = padded.bert(ids, attention_mask=mask, token_type_ids=types).last_hidden_state[mask.bool()]
    states, p = unpadded_encoder(padded.bert, ids, mask, types)
    assert states.shape == (int(mask.sum()), CONFIG.hidden_size)
    torch.testing.assert_close(states, expected, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(p.unpack(states)[mask.bool()], expected, rtol=1e-5, atol=1e-5)


def test_the_last_layer_goes_past_attention_for_the_kept_pieces_only():
    """With `keep`, the last layer's feed-forward sees only the kept rows, and they are the padded model's states."""
    padded, _ = pair()
    b = batch()
    keep = b["labels"] != -100
    keep[:, 0] = True  # the targets and each [CLS], as UnpaddedBertForPreTraining keeps them
    rows = []
    hook = padded.bert.encoder.layer[-1].intermediate.register_forward_hook(lambda m, i, o: rows.append(i[0].shape[0]))
    states, p = unpadded_encoder(padded.bert, b["input_ids"], b["attention_mask"], b["token_type_ids"], keep)
    hook.remove()
    assert rows == [int(keep.sum())] and int(keep.sum()) < int(b["attention_mask"].sum()) // 3, rows
    expected = padded.bert(b["input_ids"], attention_mask=b["attention_mask"],
                           token_type_ids=b["token_type_ids"]).last_hidden_state[keep]
    torch.testing.assert_close(states, expected, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="padding position"):
        unpadded_encoder(padded.bert, b["input_ids"], b["attention_mask"], keep=b["attention_mask"] == 0)


def test_training_steps_follow_the_same_curve():
    """Five AdamW steps on each path, from the same weights on the same batch: the same losses."""
    curves = []
    for model in pair():
        model.train()
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        losses = []
        for _ in range(5):
            loss = model(**batch(), targets_only=True).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            losses.append(loss.item())
        curves.append(losses)
    assert curves[0][-1] < curves[0][0], "the loss goes down"
    assert curves[0] == pytest.approx(curves[1], rel=1e-5, abs=1e-5), curves


def test_what_the_unpadded_path_does_not_cover_takes_the_padded_one():
    padded, unpadded = pair()
    b = batch()
    out = unpadded(**b, output_attentions=True)  # probabilities need the (B, T, T) layout
    assert out.attentions is not None and out.prediction_logits.shape == (*b["input_ids"].shape, 600)
    torch.testing.assert_close(out.loss, padded(**b, output_attentions=True).loss)
    assert unpadded(**b).prediction_logits.shape == (*b["input_ids"].shape, 600), "targets_only=False: every position"


def test_a_mask_of_the_wrong_shape_is_refused_with_the_reason():
    padded, _ = pair()
    ids = torch.randint(5, 600, (2, 8))
    with pytest.raises(ValueError, match="one mask entry per position"):
        unpadded_encoder(padded.bert, ids, torch.ones(2, 7, dtype=torch.long))


def test_rows_starting_with_padding_and_labels_at_padding_take_the_padded_path():
    """The pooler reads position 0 and the padded loss counts every label: a batch where either differs from the
    packed view gives exactly the padded model's outputs (here: left padding, and a label at a padded position)."""
    padded, unpadded = pair()
    b = batch()
    left = {k: v.flip(1) if v.dim() == 2 else v for k, v in b.items()}  # padding first, [CLS] after it
    for case in (left, {**b, "labels": b["labels"].masked_fill(b["attention_mask"] == 0, 7)}):
        ours, theirs = unpadded(**case, targets_only=True), padded(**case, targets_only=True)
        torch.testing.assert_close(ours.seq_relationship_logits, theirs.seq_relationship_logits)
        torch.testing.assert_close(ours.loss, theirs.loss)


def test_position_ids_and_a_float_mask():
    padded, unpadded = pair()
    b = batch()
    positions = torch.arange(24).flip(0).expand(16, 24)  # given position ids: the padded path uses them
    torch.testing.assert_close(unpadded(**b, position_ids=positions, targets_only=True).loss,
                               padded(**b, position_ids=positions, targets_only=True).loss)
    floats = {**b, "attention_mask": b["attention_mask"].float()}
    torch.testing.assert_close(unpadded(**floats, targets_only=True).loss, padded(**b, targets_only=True).loss,
                               rtol=1e-6, atol=1e-6)


def test_dropout_is_on_in_training_and_off_in_eval():
    config = BertConfig.tiny(vocab_size=600)  # dropout 0.1
    torch.manual_seed(0)
    unpadded = UnpaddedBertForPreTraining(config)
    padded = BertForPreTraining(config)
    padded.load_state_dict(unpadded.state_dict())
    b = batch()
    first, second = (unpadded.train()(**b, targets_only=True).loss for _ in range(2))
    assert first.item() != second.item(), "training: new dropout masks at every call"
    torch.testing.assert_close(unpadded.eval()(**b, targets_only=True).loss, padded.eval()(**b, targets_only=True).loss,
                               rtol=1e-6, atol=1e-6)


def test_the_cpu_dropout_draws_f_dropouts_distribution():
    from minibert.unpadded import _dropout
    torch.manual_seed(0)
    x = torch.randn(400, 500, requires_grad=True)
    y = _dropout(x, 0.1, True)
    kept = y != 0
    assert abs(kept.float().mean().item() - 0.9) < 0.004, "each entry kept with probability 1 - p (s.e. 0.0007 here)"
    torch.testing.assert_close(y[kept], x[kept] / 0.9)  # the kept ones scaled by 1 / (1 - p), as F.dropout does
    y.sum().backward()
    torch.testing.assert_close(x.grad, kept.float() / 0.9)  # the gradient goes through the same mask
    assert not torch.equal(kept, _dropout(x, 0.1, True) != 0), "a new mask at every call"
    assert _dropout(x, 0.1, False) is x and _dropout(x, 0.0, True) is x
    assert (_dropout(x, 1.0, True) == 0).all()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_the_cpu_dropout_keeps_its_probability_in_half_precision(dtype):
    """torch.rand drawn in bf16 takes only about 2,000 distinct values: compared with p = 0.001 it dropped 5,862 of
    these 2,000,000 (fp16: 2,563); drawn in fp32, 2,000 +- 45."""
    from minibert.unpadded import _dropout
    torch.manual_seed(0)
    y = _dropout(torch.ones(2000, 1000, dtype=dtype), 0.001, True)
    assert y.dtype == dtype
    dropped = int((y == 0).sum())
    assert abs(dropped - 2_000) < 225, f"{dropped} of 2,000,000 dropped at p = 0.001: 2,000 +- 45 expected"


def fake_dropout(x, p=0.5, training=True, inplace=False):
    """A stand-in for dropout that is deterministic but not affine (LayerNorm would cancel a scale or a shift) and
    depends on p: if both paths call it at the same places with the same p, they compute the same function."""
    return x * (1 + p * torch.sin(3 * x)) if training and p > 0 else x


def test_each_dropout_sits_where_the_padded_model_has_it(monkeypatch):
    """The padded model's dropouts (nn.Dropout and attention's F.dropout, on its written-out path) and the unpadded
    path's `_dropout` replaced by the same deterministic stand-in: the two paths must then agree, which they only do
    if every dropout is at the same place, on the same tensor, with the same p (hidden 0.1, attention 0.2 here)."""
    import torch.nn.functional as F

    import minibert.unpadded as unpadded_module
    config = BertConfig.tiny(vocab_size=600, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.2)
    padded, unpadded = pair(config)
    b = batch()
    monkeypatch.setattr(unpadded_module, "_dropout", fake_dropout)
    monkeypatch.setattr(F, "dropout", fake_dropout)  # nn.Dropout and chapter 03's written-out attention call it
    ours = unpadded.train()(**b, targets_only=True)
    theirs = padded.train()(**b, targets_only=True, output_attentions=True)  # the path with F.dropout on the probs
    torch.testing.assert_close(ours.loss, theirs.loss, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(ours.seq_relationship_logits, theirs.seq_relationship_logits, rtol=1e-5, atol=1e-5)
    monkeypatch.undo()
    first, second = (unpadded.train()(**b, targets_only=True).loss.item() for _ in range(2))
    assert first != second, "with the real dropout, new masks at every call"


def test_more_positions_than_the_model_has_is_refused_with_the_fix():
    padded, _ = pair(BertConfig.tiny(vocab_size=600, max_position_embeddings=16))
    ids = torch.randint(5, 600, (2, 20))
    with pytest.raises(ValueError, match="split_into_windows"):
        unpadded_encoder(padded.bert, ids, torch.ones(2, 20, dtype=torch.long))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA: the bf16 twin of the fp32 equality test above, "
                    "which runs on CPU")
def test_same_loss_and_gradients_in_bf16_on_cuda():
    from minibert.training import autocast

    config = BertConfig.small(vocab_size=2000, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    padded, unpadded = pair(config, "cuda")
    b = batch(rows=32, seq=128, vocab=2000, device="cuda")
    outs = []
    for model in (padded, unpadded):
        with autocast(torch.device("cuda"), "bf16"):
            out = model(**b, targets_only=True)
        out.loss.backward()
        outs.append(out)
    torch.testing.assert_close(outs[1].loss.float(), outs[0].loss.float(), rtol=2e-2, atol=2e-2)
    flat = [torch.cat([p.grad.float().flatten() for p in model.parameters()]) for model in (padded, unpadded)]
    gap = ((flat[1] - flat[0]).norm() / flat[0].norm()).item()
    assert gap < 5e-2, f"gradients {gap:.3g} apart (relative norm): more than bf16 rounding"


def test_the_train_command_trains_the_unpadded_model_on_the_same_curve(tmp_path):
    """`python -m minibert.train --unpadded`: the same evaluations as the padded run (no dropout, so the only
    difference is fp32 rounding), a checkpoint that BertForPreTraining reads, and a resume that continues it."""
    import subprocess
    import sys

    from minibert.pretrain import load_trainer_state

    def train(out, *flags):
        cmd = [sys.executable, "-m", "minibert.train", "--device", "cpu", "--steps", "6", "--eval-every", "2",
               "--limit-documents", "12", "--vocab-size", "800", "--seq-len", "32", "--batch-size", "8",
               "--hidden-size", "32", "--num-hidden-layers", "2", "--num-attention-heads", "2",
               "--intermediate-size", "64", "--dropout", "0", "--attention-dropout", "0", "--precision", "fp32",
               "--out", str(out), "--no-progress", *flags]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=300)

    padded, unpadded = tmp_path / "padded", tmp_path / "unpadded"
    assert train(padded).returncode == 0
    proc = train(unpadded, "--unpadded", "--stop-after-step", "4")
    assert proc.returncode == 143, proc.stderr[-2000:]
    proc = train(unpadded, "--unpadded")  # resumes from step 4
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "(unpadded)" in proc.stdout, proc.stdout
    ours, theirs = (load_trainer_state(run / "checkpoint")["history"] for run in (unpadded, padded))
    assert [h["step"] for h in ours] == [h["step"] for h in theirs] == [2, 4, 6]
    for a, b in zip(ours, theirs, strict=True):
        assert a["loss"] == pytest.approx(b["loss"], abs=1e-4), (a, b)
        assert a["mlm_accuracy"] == pytest.approx(b["mlm_accuracy"], abs=1e-6)
    ours, theirs = (BertForPreTraining.from_pretrained(run / "checkpoint").state_dict() for run in (unpadded, padded))
    assert ours.keys() == theirs.keys()  # the unpadded run's checkpoint is a plain one, with the padded run's weights
    for key in theirs:
        torch.testing.assert_close(ours[key], theirs[key], rtol=1e-3, atol=1e-5, msg=lambda m, k=key: f"{k}: {m}")
