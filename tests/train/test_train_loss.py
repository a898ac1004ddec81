"""The position-aware contrastive loss against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from landmark_rag.train.loss import distillation_loss, position_aware_contrastive_loss, position_weights


def test_position_weights_decay_from_the_last_sentence():
    w = position_weights(3, alpha=0.08)
    assert torch.allclose(w, torch.tensor([1.0, math.exp(-0.08), math.exp(-0.16)]))


def test_hand_computed_example():
    # one query, three units; answer span = units 0..1, so z = 1 (weight 1) and unit 0 weight 1/2
    q = torch.tensor([[1.0, 0.0]])
    u = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    # scores [1, 0, -1]; log Z = log(e + 1 + 1/e) = 1.4076059644
    # loss = -(1 * (0 - 1.4076059644) + 0.5 * (1 - 1.4076059644)) = 1.6114089466
    loss = position_aware_contrastive_loss(q, u, [[0, 1]], temperature=1.0, alpha=math.log(2))
    assert loss.item() == pytest.approx(1.6114089466, abs=1e-6)


def test_normalised_span_weights_make_every_question_weigh_one():
    # the same hand example with weights 1 and 1/2 divided by their sum 3/2
    q = torch.tensor([[1.0, 0.0]])
    u = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    summed = position_aware_contrastive_loss(q, u, [[0, 1]], temperature=1.0, alpha=math.log(2))
    normed = position_aware_contrastive_loss(q, u, [[0, 1]], temperature=1.0, alpha=math.log(2), normalize=True)
    assert normed.item() == pytest.approx(summed.item() / 1.5, abs=1e-6)
    # a one-sentence span is the same loss either way: only long spans lose their extra weight
    one = position_aware_contrastive_loss(q, u, [[1]], temperature=1.0)
    assert position_aware_contrastive_loss(q, u, [[1]], temperature=1.0, normalize=True).item() == pytest.approx(one.item())


def test_temperature_and_mean_over_queries():
    q = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    u = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    # tau 0.5: scores/tau = [2, 0] resp. [0, 2]; query 0 -> unit 0, query 1 -> unit 0
    # q0: -log(e^2/(e^2+1)) = 0.1269280110 ; q1: -log(1/(1+e^2)) = 2.1269280110
    loss = position_aware_contrastive_loss(q, u, [[0], [0]], temperature=0.5, alpha=0.08)
    assert loss.item() == pytest.approx((0.1269280110 + 2.1269280110) / 2, abs=1e-6)


def test_in_batch_negatives_raise_the_loss():
    q = torch.tensor([[1.0, 0.0]])
    own = torch.tensor([[0.8, 0.6], [0.0, 1.0]])
    other_doc = torch.tensor([[0.6, 0.8]])
    alone = position_aware_contrastive_loss(q, own, [[0]])
    with_batch = position_aware_contrastive_loss(q, torch.cat([own, other_doc]), [[0]])
    assert with_batch > alone


def test_gradient_pulls_query_towards_the_span_end():
    q = torch.tensor([[0.6, 0.8]], requires_grad=True)
    u = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    position_aware_contrastive_loss(q, u, [[1]], temperature=0.1).backward()
    assert q.grad[0, 1] < 0 < q.grad[0, 0]  # descending moves q towards unit 1, away from unit 0


def test_distillation_loss():
    a = torch.tensor([[1.0, 0.0], [0.0, 2.0]])
    assert distillation_loss(a, a).item() == pytest.approx(0.0, abs=1e-7)
    assert distillation_loss(a, torch.tensor([[0.0, 1.0], [0.0, 1.0]])).item() == pytest.approx(0.5)


def test_bad_spans_rejected():
    with pytest.raises(ValueError):
        position_aware_contrastive_loss(torch.ones(2, 2), torch.ones(3, 2), [[0]])
    with pytest.raises(ValueError):
        position_weights(0)


@pytest.mark.parametrize(("steps", "warmup_ratio", "lr"), [(300, 0.1, 2e-4), (40, 0.1, 1e-4), (7, 0.3, 5e-5), (1, 0.1, 1e-3)])
def test_stage_scheduler_matches_the_schedule_the_shipped_model_was_trained_with(steps, warmup_ratio, lr):
    """transformers' schedule, step by step, against the closed form the shipped adapter was
    trained with: equal in float64 up to rounding, and exactly equal in what AdamW applies in
    float32 (the rate, the decoupled weight-decay factor and the bias-corrected step size)."""
    from landmark_rag.train.trainer import stage_scheduler

    param = torch.nn.Parameter(torch.zeros(3))
    opt = torch.optim.AdamW([param], lr=1.0, weight_decay=0.01)
    schedule = stage_scheduler(opt, lr, steps, warmup_ratio)
    warm = max(1, int(warmup_ratio * steps))
    for k in range(steps):
        want = lr * (k + 1) / warm if k < warm else lr * max(0.0, (steps - k) / max(1, steps - warm))
        got = opt.param_groups[0]["lr"]
        assert got == pytest.approx(want, rel=1e-12, abs=0)
        bias1 = 1 - 0.9 ** (k + 1)
        for applied in (lambda x: x, lambda x: 1 - x * 0.01, lambda x, b=bias1: x / b):
            assert np.float32(applied(got)) == np.float32(applied(want)), k
        opt.step()
        schedule.step()


def test_boundary_margin_makes_a_hit_before_the_span_dearer() -> None:
    """The same scores cost more when the unit before the answer is within the margin of it,
    and nothing changes for a unit elsewhere or with margin 0."""
    q = torch.nn.functional.normalize(torch.tensor([[1.0, 0.0]]), dim=-1)
    units = torch.nn.functional.normalize(torch.tensor([[0.9, 0.1], [1.0, 0.0], [0.9, -0.1], [0.0, 1.0]]), dim=-1)
    plain = position_aware_contrastive_loss(q, units, [[1]])
    before = position_aware_contrastive_loss(q, units, [[1]], preceding=[[0]], margin=0.1)
    after = position_aware_contrastive_loss(q, units, [[1]], preceding=[[2]], margin=0.1)
    assert before > plain + 0.5
    assert torch.allclose(before, after)  # the margin follows the listed units, whichever they are
    assert torch.allclose(position_aware_contrastive_loss(q, units, [[1]], preceding=[[0]], margin=0.0), plain)
    with pytest.raises(ValueError, match="preceding"):
        position_aware_contrastive_loss(q, units, [[1]], preceding=[], margin=0.1)


def test_front_set_term_charges_a_hit_before_the_answer_not_one_after() -> None:
    """With the answer at unit 1, scores mirrored around it cost the same under the paper's
    loss; the front-set term (kept = units 1..2) makes the hit BEFORE the answer dearer than
    the hit after it, equals -log of the kept units' probability mass, and weight 0 is a no-op."""
    q = torch.nn.functional.normalize(torch.tensor([[1.0, 0.0]]), dim=-1)
    near, far = torch.tensor([0.95, 0.3]), torch.tensor([0.0, 1.0])
    units_before = torch.nn.functional.normalize(torch.stack([near, torch.tensor([1.0, 0.1]), far, far]), dim=-1)
    units_after = torch.nn.functional.normalize(torch.stack([far, torch.tensor([1.0, 0.1]), near, far]), dim=-1)
    paper_before = position_aware_contrastive_loss(q, units_before, [[1]])
    paper_after = position_aware_contrastive_loss(q, units_after, [[1]])
    assert torch.allclose(paper_before, paper_after)
    kept = [[1, 2]]
    before = position_aware_contrastive_loss(q, units_before, [[1]], kept=kept, kept_weight=1.0)
    after = position_aware_contrastive_loss(q, units_after, [[1]], kept=kept, kept_weight=1.0)
    assert before > after + 0.1
    p = torch.softmax((q @ units_after.T)[0] / 0.05, dim=-1)
    assert torch.allclose(after - paper_after, -torch.log(p[1] + p[2]), atol=1e-6)
    assert torch.allclose(position_aware_contrastive_loss(q, units_before, [[1]], kept=kept, kept_weight=0.0), paper_before)
    with pytest.raises(ValueError, match="kept"):
        position_aware_contrastive_loss(q, units_before, [[1]], kept=[], kept_weight=1.0)
    with pytest.raises(ValueError, match="kept"):
        position_aware_contrastive_loss(q, units_before, [[1]], kept_weight=1.0)


def test_front_set_weight_is_checked_and_follows_the_models_front_k() -> None:
    from landmark_rag.train.config import TrainConfig, TrainingInputError

    assert TrainConfig(expansion="front", expansion_params={"k": 5}).front_k == 5
    assert TrainConfig(expansion="surround", expansion_params={"before": 1}).front_k == 3
    with pytest.raises(TrainingInputError, match="front_set_weight"):
        TrainConfig(front_set_weight=-1.0)


def test_a_prior_adds_to_the_logits_before_the_softmax() -> None:
    """A zero prior is no prior; a prior on the answer lowers the loss (BM25 already ranks it),
    one on a negative raises it; a prior of the wrong shape is refused."""
    q = torch.tensor([[1.0, 0.0]])
    u = torch.tensor([[0.0, 1.0], [1.0, 0.0], [0.6, 0.8]])
    base = position_aware_contrastive_loss(q, u, [[0]], temperature=0.5)
    zero = position_aware_contrastive_loss(q, u, [[0]], temperature=0.5, prior=torch.zeros(1, 3))
    assert zero.item() == pytest.approx(base.item(), abs=1e-7)
    on_answer = position_aware_contrastive_loss(q, u, [[0]], temperature=0.5, prior=torch.tensor([[2.0, 0.0, 0.0]]))
    on_other = position_aware_contrastive_loss(q, u, [[0]], temperature=0.5, prior=torch.tensor([[0.0, 2.0, 0.0]]))
    assert on_answer < base < on_other
    # by hand: logits [0, 2, 1.2] + prior [2, 0, 0] -> -log(e^2 / (e^2 + e^2 + e^1.2))
    assert on_answer.item() == pytest.approx(-math.log(math.e**2 / (2 * math.e**2 + math.e**1.2)), abs=1e-6)
    with pytest.raises(ValueError, match="prior of shape"):
        position_aware_contrastive_loss(q, u, [[0]], prior=torch.zeros(1, 2))
