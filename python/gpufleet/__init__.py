"""gpufleet: a native scheduling core for deep-learning GPU clusters."""
__version__ = "0.1.0"
