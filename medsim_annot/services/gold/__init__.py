"""The gold subset of a study: the per-pair verdicts exported for benchmarking, and the gold
files read back to evaluate embedding scores.

One module per job:

* :mod:`.table` — :class:`~.table.GoldTable`, :func:`~.table.gold_table` (one row per pair
  with the verdict, agreement flags, model columns and label provenance) and
  :func:`~.table.study_gold_table` (a stored study's);
* :mod:`.filters` — :func:`~.filters.apply_filters`, the export's filters in their fixed order;
* :mod:`.snapshot` — :class:`~.snapshot.GoldSnapshot`, one consistent read of a study for an
  export, and the manifest's design entry;
* :mod:`.export` — :func:`~.export.export_gold`, the file and its manifest, or the Hugging
  Face dataset folder;
* :mod:`.files` — :func:`~.files.read_gold`, gold files (and ratings, EHR-Rel and pairs files)
  read back as gold values for ``medsim evaluate``.

Nothing is imported here: callers import the module of the job they need.
"""
