"""The reference trainer worker (PyTorch): see README.md."""
