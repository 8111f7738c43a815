"""The applicant's locale: their language (and the system's own texts in it), country and time zone."""
