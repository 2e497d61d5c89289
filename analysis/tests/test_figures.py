

def test_timeline_gives_each_app_one_colour_in_both_panels() -> None:
    import pandas as pd
    from pimcloud.analysis.figures import timeline

    windows = pd.DataFrame({"app": ["a", "a", "b", "b"], "t_s": [0.0, 0.1, 0.0, 0.1],
                            "p99_ns": [1e6, 2e6, 3e6, 4e6]})
    # The agent's start event has no app; it must not shift the colours.
    cores = pd.DataFrame({"app": ["", "a", "b"], "t_s": [0.0, 0.0, 0.05],
                          "cores": [0, 4, 8]})
    figure = timeline(windows, cores)
    top, bottom = figure.axes[:2]
    top_colours = {line.get_label(): line.get_color() for line in top.get_lines()
                   if not line.get_label().startswith("_")}
    bottom_colours = {line.get_label(): line.get_color() for line in bottom.get_lines()
                      if not line.get_label().startswith("_")}
    assert set(bottom_colours) == {"a", "b"}
    assert top_colours == bottom_colours
