"""The people of a study who sign in with a code: adjudicators (:mod:`.adjudicators`)."""
