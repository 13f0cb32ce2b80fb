"""Limits shared by the contracts, the services and the browser widget (documented in
docs/annotation.md)."""

#: Longest comment an annotator may save with a rating (characters, after stripping).
COMMENT_MAX_CHARS = 2000

#: A key press within this many milliseconds of a pair being drawn is ignored (and shown as
#: ignored): it cannot be a judgement of a pair the doctor has had no time to read. The
#: unseen-pair ratings of issue 17 came 8–35 ms after the pair was drawn; a doctor typing
#: ahead presses every 120 ms or slower (issue 13), so 80 ms keeps both.
MIN_VIEW_MS = 80
