"""SEO Lens core: pure crawler logic (URLs, robots, politeness, parsing, audit) with no I/O."""
