# DeepSpeed's training-loop rules, written out from its sources for the tests to
# check zero-run against (deepspeed/runtime/lr_schedules.py, fp16/loss_scaler.py).
# Plain Python: no DeepSpeed needed.
import math


def scheduled_lr(kind, t, lr, warmup_steps, warmup_type="log", total_steps=0,
                 warmup_min_lr=0.0, warmup_max_lr=None, cos_min_ratio=0.0001,
                 warmup_min_ratio=0.0):
    """WarmupLR ("warmup"), WarmupDecayLR ("warmup-decay"), WarmupCosineLR
    ("warmup-cosine") at the scheduler's last_batch_iteration t (-1: as
    constructed); `lr` is the optimizer's rate. Operation for operation as
    lr_schedules.py computes it."""
    max_lr = lr if warmup_max_lr is None else warmup_max_lr
    n = max(2, warmup_steps)

    def gamma():
        if warmup_type == "log":
            return (1.0 / math.log(n)) * math.log(t + 1)
        return t / n

    if kind == "warmup-cosine":
        if t < 0:
            return 0.0
        if t < n:
            ratio = warmup_min_ratio + gamma() * (1.0 - warmup_min_ratio)
        else:
            progress = min(1.0, (t - n + 1) / max(1, total_steps - n))
            ratio = (1 + math.cos(math.pi * progress)) / 2
            ratio = max(0.0, cos_min_ratio + (1.0 - cos_min_ratio) * ratio)
        return lr * ratio
    if t < 0:
        return warmup_min_lr
    if t < n:
        g = gamma()
    elif kind == "warmup":
        g = 1.0
    else:
        g = max(0.0, float(total_steps - t) / float(max(1.0, total_steps - n)))
    return warmup_min_lr + (max_lr - warmup_min_lr) * g


def lr_after_applied(kind, applied, *args, **kwargs):
    """The rate of the optimizer step after `applied` applied (not skipped) ones:
    DeepSpeed's engine builds the scheduler at iteration -1 and steps it after
    each applied step, so that step uses iteration applied - 1."""
    return scheduled_lr(kind, applied - 1, *args, **kwargs)


class DynamicLossScaler:
    """DynamicLossScaler.update_scale; `dynamic=False` is a fixed scale."""

    def __init__(self, scale, window=1000, hysteresis=2, min_scale=1.0, dynamic=True):
        self.scale, self.window, self.hysteresis = scale, window, hysteresis
        self.min_scale, self.dynamic = min_scale, dynamic
        self.counter, self.iter, self.last_overflow = hysteresis, 0, -1

    def update(self, overflow):
        if not self.dynamic:
            return
        if overflow:
            if self.hysteresis == 1 or self.counter == 1:
                if self.scale == self.min_scale:
                    raise RuntimeError("overflow at the minimum loss scale")
                self.scale = max(self.scale / 2, self.min_scale)
            else:
                self.counter -= 1
            self.last_overflow = self.iter
        elif (self.iter - self.last_overflow) % self.window == 0:
            self.counter = self.hysteresis
            self.scale *= 2
        self.iter += 1


def expected_scales(skipped, scale, window=1000, hysteresis=2, min_scale=1.0,
                    dynamic=True):
    """The scale each step uses, given which steps overflowed."""
    s = DynamicLossScaler(scale, window, hysteresis, min_scale, dynamic)
    out = []
    for overflow in skipped:
        out.append(s.scale)
        s.update(overflow)
    return out
