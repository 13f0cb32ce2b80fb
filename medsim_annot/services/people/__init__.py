"""People: anyone who signs in — study admins, annotators and adjudicators — and how.

One module per job:

* :mod:`.passwords` — admin password hashing (scrypt), checking, re-hashing and the rules;
* :mod:`.admins` — named admins, :class:`~.admins.AdminIdentity` and the session check
  :func:`~.admins.admin_session_valid`;
* :mod:`.signin` — throttled sign-in by admin password or access code;
* :mod:`.sso` — single sign-on: whether it may run, and the role of an SSO user
  (:func:`~.sso.sso_role`), annotators' SSO links;
* :mod:`.auth` — annotators' access codes and :func:`~.auth.authenticate_annotator`;
* :mod:`.annotators` — annotator administration (add, rename, codes, revoke);
* :mod:`.adjudicators` — adjudicator accounts (add, codes, revoke, SSO links, sign-in);
* :mod:`.tokens` — the short-lived bearer tokens of the rating endpoint;
* :mod:`.throttle` — the sign-in throttle;
* :mod:`.names` — study, annotator and SSO identity names as people type them.

Nothing is imported here: callers import the module of the job they need (a module here
may need the study services, which need :mod:`.auth` and :mod:`.names`).
"""
