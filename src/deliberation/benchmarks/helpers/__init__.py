"""What the benchmark files share: numeric answers, arithmetic, data sources, the code sandbox."""
