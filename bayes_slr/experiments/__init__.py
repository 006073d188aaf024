"""Whole measurements: gap across lengths, ERM experiments, posterior summaries, theory curves, AMP
runs.
"""
