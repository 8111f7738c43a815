"""Composition roots shared by more than one function: the one place a use case meets its
adapters (DynamoDB, SQS, the model), so two functions running the same use case cannot wire it
two ways. A function with a use case of its own wires it in its handler."""
