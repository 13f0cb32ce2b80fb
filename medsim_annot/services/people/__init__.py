"""People: anyone who signs in — study admins, annotators and adjudicators — and how.

One module per job:

* :mod:`.passwords` — admin password hashing (scrypt), checking, re-hashing and the rules;
* :mod:`.admins` — named admins, :class:`~.admins.AdminIdentity` and the session check
  :func:`~.admins.admin_session_valid`;
* :mod:`.signin` — throttled sign-in by admin password or access code;
* :mod:`.sso` — single sign-on: whether it may run, the role of an SSO user
  (:func:`~.sso.sso_role`), a study's SSO switch and links;
* :mod:`.auth` — access codes (new, hashed, the one check of a typed code);
* :mod:`.members` — the one "member with a code" model: a :class:`~.members.Role` record per
  role and the shared add, issue code, revoke, link SSO, sign-in and session check;
* :mod:`.annotators` — the annotator role (list, add, rename, codes, revoke, SSO link,
  :func:`~.annotators.authenticate_annotator`);
* :mod:`.adjudicators` — the adjudicator role (list, add, codes, revoke, SSO link, sign-in);
* :mod:`.tokens` — the short-lived bearer tokens of the rating endpoint;
* :mod:`.throttle` — the sign-in throttle;
* :mod:`.names` — study, annotator and SSO identity names as people type them;
* :mod:`.language` — a person's own language (set by an admin or chosen), kept in the store.

Nothing is imported here: callers import the module of the job they need (a module here
may need the study services, which need :mod:`.auth` and :mod:`.names`).
"""
