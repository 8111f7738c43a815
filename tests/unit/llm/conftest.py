"""Engine unit tests: no network, a scripted in-memory model, a fake clock."""
