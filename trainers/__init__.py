"""Trainers that speak the reins trainer protocol."""
