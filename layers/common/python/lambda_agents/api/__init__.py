"""HTTP conventions every API function shares: one resolver factory, one error mapping,
one way to read the caller's identity."""
