import evaluate
from evaluate.utils import launch_gradio_widget

module = evaluate.load("jemhopqa")
launch_gradio_widget(module)
