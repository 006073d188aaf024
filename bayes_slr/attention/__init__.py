"""Attention estimators ``f(X) = sum_l s(chi)_l z_l`` and their training (docs/model.md
section 3).
"""
