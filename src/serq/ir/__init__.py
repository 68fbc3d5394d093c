"""The IR (version 11): dataclasses, JSON in and out, validation."""
