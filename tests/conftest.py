"""Shared fixtures. Unit tests never reach the network; integration tests reach 127.0.0.1 only."""

from __future__ import annotations

import os

# Set before any product module is imported: offline, no X-Ray, fake AWS credentials.
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "LambdaAgentsTest")
os.environ.setdefault("AI_AGENT_MODE", "mock")
