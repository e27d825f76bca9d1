"""Reporting: tidy tables, paper-style figures and the run manifest. Nothing here computes scores."""
