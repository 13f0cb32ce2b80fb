"""Use cases shared by the CLI and the Streamlit pages, one job per module or package.

A study name is turned into a study once, where a page, a command or the endpoint comes in
(:func:`.study_handle.open_study`); services take the :class:`~.study_handle.Study` handle.
Nothing is imported here: callers import the room of the job they need, and
``tests/test_layers.py`` fails on an import circle or an import inside a function.

Packages (each names its modules in its own docstring):

* :mod:`.people` — anyone who signs in: admins, annotators and adjudicators (one model of a
  member with a code), passwords, sign-in and its throttle, SSO, the endpoint's tokens;
* :mod:`.gold` — the per-pair verdicts (table), the export filters, the one consistent read
  (snapshot), the gold file and its manifest (export), gold files read back (files);
* :mod:`.adjudication` — decisions and the board an adjudicator works through;
* :mod:`.dashboard` — the QA dashboard's figures, declared as named steps, cached per
  ratings version, and its HTML report.

Modules:

* :mod:`.study_handle` — :class:`~.study_handle.Study` and :func:`~.study_handle.open_study`;
* :mod:`.studies` — create, import, list and read studies (pairs, current ratings, history);
* :mod:`.design` — plan and create a designed study (sampling, k-of-n, calibration, checks);
* :mod:`.annotation` — what an annotator is served and saves (blind :class:`PairView`);
* :mod:`.rating_queue` — the ratings endpoint's rules (pending lists, acknowledgements);
* :mod:`.tiebreak` — the 2 + 1 design's third rating, inside the rating's transaction;
* :mod:`.stopping` — the sequential audit's stopping rule per group;
* :mod:`.quality` — rater checks: check pairs, rushed ratings, their settings;
* :mod:`.agreement` — agreement and audit reports from a ratings file or a study;
* :mod:`.predictions` — a model's scores: prediction-powered audit, the model as a rater;
* :mod:`.scoring` — embedding scoring over verified subsets;
* :mod:`.interop` — exports to and imports from other tools;
* :mod:`.activity` — the event log: who did what;
* :mod:`.study_texts` — the study's own texts per language (guideline, question, options);
* :mod:`.backup` — backup and restore of the store;
* :mod:`.demo` — the demo studies of the embedded default store;
* :mod:`.build_snomed`, :mod:`.build_cooccurrence` — the dataset builders' use cases;
* :mod:`.plots` — plotly figures of the pages and the report;
* :mod:`.store` — which store this process uses (the engine).
"""
