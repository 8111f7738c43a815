"""Status judge (docs/judge.md): which rule an agent's output matches, through three independent
stages (structured output, the [MOVEMENT:N] tag, an AI judge) on the shared engine."""
