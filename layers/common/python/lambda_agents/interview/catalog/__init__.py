"""The job catalog and its applications: the employer's versioned jobs and their notice, the
listings of jobs, the employer's reads of a job's applications, and an applicant's own interviews."""
