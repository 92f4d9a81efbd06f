import evaluate
from evaluate.utils import launch_gradio_widget

module = evaluate.load("doc2dial")
launch_gradio_widget(module)
