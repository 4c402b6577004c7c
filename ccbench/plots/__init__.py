"""Figures of runs and matrices: what each shows (`model.py`; built by `run.py` and
`matrix.py`, with matrix axes read by `axes.py` and titles' conditions by `conditions.py`),
drawn with matplotlib into files (`figures.py`) and as Plotly JSON for the result pages
(`web.py`)."""
