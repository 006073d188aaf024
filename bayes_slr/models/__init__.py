"""SLR generative models: task specification, simulator, NumPyro models."""
