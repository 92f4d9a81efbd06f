import evaluate
from evaluate.utils import launch_gradio_widget

module = evaluate.load("topical_chat")
launch_gradio_widget(module)
