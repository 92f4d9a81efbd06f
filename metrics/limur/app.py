import evaluate
from evaluate.utils import launch_gradio_widget

module = evaluate.load("limur")
launch_gradio_widget(module)
