"""Limits shared by the contracts, the services and the browser widget (documented in
docs/annotation.md)."""

#: Longest term of a pair (characters). A medical term is a few words; a file with terms of
#: many kilobytes is a wrong column or a pasted document, and a window of such pairs could
#: exceed the size of one browser message.
TERM_MAX_CHARS = 500

#: Longest comment an annotator may save with a rating (characters, after stripping).
COMMENT_MAX_CHARS = 2000

#: A key press within this many milliseconds of a pair being drawn is ignored (and shown as
#: ignored): it cannot be a judgement of a pair the doctor has had no time to read. Double
#: presses that rated a pair nobody had seen came 8–35 ms after the pair was drawn; a doctor
#: typing ahead presses every 120 ms or slower, so 80 ms drops the first and keeps the second.
MIN_VIEW_MS = 80
