"""The agents that hold the conversation: Greeter, Architect, Interviewer (spec 003)."""

from .architect import ArchitectAgent
from .greeter import GreeterAgent
from .interviewer import InterviewerAgent

__all__ = ["ArchitectAgent", "GreeterAgent", "InterviewerAgent"]
