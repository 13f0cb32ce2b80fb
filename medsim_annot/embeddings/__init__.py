"""Embedding benchmarking: tokenising, loading, similarity metrics and their evaluation.

Modules: :mod:`.tokenise` (terms to words), :mod:`.loaders` (word2vec, GloVe, fastText,
memory-mapped cache), :mod:`.contextual` (sentence-transformers), :mod:`.lexical`
(Levenshtein and character n-gram baselines), :mod:`.metrics` (the ten word metrics, fast and
reference), :mod:`.evaluate` (AUC, accuracy, McNemar, Spearman with BCa bootstrap,
category separation). Use cases live in :mod:`medsim_annot.services.scoring`.
"""
