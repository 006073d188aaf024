"""Attention estimators ``f(X) = sum_l s(chi)_l z_l`` and their training (MODEL.md section 3)."""
