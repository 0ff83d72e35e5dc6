"""Predictors that anticipatory schedulers learn from history (SIA §5.4)."""
